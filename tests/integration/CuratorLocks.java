// CuratorLocks - a Java service holding Apache Curator locks on command,
// for the tests that share a lock path between Curator and a mount.
//
//   java -cp CLASSPATH CuratorLocks HOSTS SESSION_TIMEOUT_MS
//
// Prints "ready" once its session is connected, then reads commands, one
// per line, and answers each asynchronously with a line that starts with
// the command's ID:
//
//   write ID PATH MS   InterProcessReadWriteLock(PATH).writeLock()
//   read ID PATH MS    InterProcessReadWriteLock(PATH).readLock()
//   mutex ID PATH MS   InterProcessMutex(PATH)
//                      acquire, waiting at most MS ms (-1: for ever);
//                      answers "ID held" or "ID timeout"
//   release ID         answers "ID released"
//
// A failure answers "ID error TEXT".  End of input closes the client.
//
// Curator's locks are re-entrant per thread and only the owning thread
// may release, so each lock lives on a thread of its own that acquires
// it, waits for its release command, and releases it.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLocks {
    private static final Map<String, CountDownLatch> releases =
        new ConcurrentHashMap<>();

    private static synchronized void answer(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static InterProcessMutex lockOf(CuratorFramework client,
                                            String kind, String path) {
        switch (kind) {
        case "write":
            return new InterProcessReadWriteLock(client, path).writeLock();
        case "read":
            return new InterProcessReadWriteLock(client, path).readLock();
        case "mutex":
            return new InterProcessMutex(client, path);
        default:
            throw new IllegalArgumentException("unknown command " + kind);
        }
    }

    private static void hold(InterProcessMutex lock, String id, long ms) {
        try {
            boolean held;
            if (ms < 0) {
                lock.acquire();
                held = true;
            } else {
                held = lock.acquire(ms, TimeUnit.MILLISECONDS);
            }
            if (!held) {
                answer(id + " timeout");
                return;
            }
            CountDownLatch release = new CountDownLatch(1);
            releases.put(id, release);
            answer(id + " held");
            release.await();
            lock.release();
            answer(id + " released");
        } catch (Exception e) {
            answer(id + " error " + e);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CuratorLocks HOSTS SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        int session = Integer.parseInt(args[1]);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                 args[0], session, 15000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                System.err.println("CuratorLocks: no ZooKeeper at " + args[0]);
                System.exit(1);
            }
            answer("ready");
            BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null;) {
                String[] w = line.trim().split(" ");
                if (w[0].equals("release") && w.length == 2) {
                    CountDownLatch release = releases.remove(w[1]);
                    if (release == null)
                        answer(w[1] + " error not held");
                    else
                        release.countDown();
                } else if (w.length == 4) {
                    InterProcessMutex lock = lockOf(client, w[0], w[2]);
                    long ms = Long.parseLong(w[3]);
                    Thread t = new Thread(() -> hold(lock, w[1], ms));
                    t.setDaemon(true);
                    t.start();
                } else {
                    answer("? error bad command: " + line);
                }
            }
        }
    }
}
