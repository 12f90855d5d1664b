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
//   revocable ID PATH MS
//                      InterProcessMutex(PATH), made revocable: a request
//                      to let go answers "ID revoke requested" (it lets go
//                      only when told to release)
//   lease ID PATH MS N InterProcessSemaphoreV2(PATH, N): one lease
//                      acquire, waiting at most MS ms (-1: for ever);
//                      answers "ID held" or "ID timeout"
//   release ID         answers "ID released"
//   revoke ID NODE     Revoker.attemptRevoke(NODE): answers "ID asked"
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
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLocks {
    private static final Map<String, CountDownLatch> releases =
        new ConcurrentHashMap<>();

    private static synchronized void answer(String line) {
        System.out.println(line);
        System.out.flush();
    }

    // Takes what a command names, waiting at most ms (-1: for ever);
    // returns what gives it back, or null after a timeout.
    interface Acquire {
        AutoCloseable take(long ms) throws Exception;
    }

    private static Acquire mutexOf(InterProcessMutex lock) {
        return ms -> {
            if (ms < 0)
                lock.acquire();
            else if (!lock.acquire(ms, TimeUnit.MILLISECONDS))
                return null;
            return lock::release;
        };
    }

    private static Acquire acquireOf(CuratorFramework client, String[] w) {
        if (w[0].equals("lease") && w.length == 5) {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(
                client, w[2], Integer.parseInt(w[4]));
            return ms -> ms < 0 ? sem.acquire()
                                : sem.acquire(ms, TimeUnit.MILLISECONDS);
        }
        if (w.length != 4)
            throw new IllegalArgumentException("bad command " + w[0]);
        switch (w[0]) {
        case "write":
            return mutexOf(
                new InterProcessReadWriteLock(client, w[2]).writeLock());
        case "read":
            return mutexOf(
                new InterProcessReadWriteLock(client, w[2]).readLock());
        case "mutex":
            return mutexOf(new InterProcessMutex(client, w[2]));
        case "revocable": {
            InterProcessMutex lock = new InterProcessMutex(client, w[2]);
            lock.makeRevocable(l -> answer(w[1] + " revoke requested"));
            return mutexOf(lock);
        }
        default:
            throw new IllegalArgumentException("unknown command " + w[0]);
        }
    }

    private static void hold(Acquire lock, String id, long ms) {
        try {
            AutoCloseable held = lock.take(ms);
            if (held == null) {
                answer(id + " timeout");
                return;
            }
            CountDownLatch release = new CountDownLatch(1);
            releases.put(id, release);
            answer(id + " held");
            release.await();
            held.close();
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
                if (w[0].equals("revoke") && w.length == 3) {
                    try {
                        Revoker.attemptRevoke(client, w[2]);
                        answer(w[1] + " asked");
                    } catch (Exception e) {
                        answer(w[1] + " error " + e);
                    }
                } else if (w[0].equals("release") && w.length == 2) {
                    CountDownLatch release = releases.remove(w[1]);
                    if (release == null)
                        answer(w[1] + " error not held");
                    else
                        release.countDown();
                } else if (w.length == 4 || w.length == 5) {
                    Acquire lock;
                    try {
                        lock = acquireOf(client, w);
                    } catch (IllegalArgumentException e) {
                        answer("? error bad command: " + line);
                        continue;
                    }
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
