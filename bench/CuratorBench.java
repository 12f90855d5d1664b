// CuratorBench - Curator's InterProcessMutex (or the write lock of its
// InterProcessReadWriteLock, or a lease of its InterProcessSemaphoreV2 of
// 2 leases) acquire/release in a loop, in one JVM: the in-process library
// zklockfs is compared with.  Or a lease's handoff: one lease of 2 held
// throughout by a third session, two sessions take turns at the other,
// timed from the holder's return to the waiter's acquire returning.  Or
// the same handoff of an InterProcessMultiLock of two mutexes, PATH/a and
// PATH/b, between two sessions.
//
//   java -cp CLASSPATH CuratorBench HOSTS PATH N
//        [mutex|write|semaphore|semaphore-handoff|multilock-handoff]
//
// Prints the line bench/stats.c prints: median_us p99_us mean_us n, the
// first tenth of the samples left out (JIT warm-up, connection); appends
// the samples to $ZKBENCH_SAMPLES if set, as stats.c does.
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.data.Stat;
import org.apache.curator.retry.RetryOneTime;

public class CuratorBench {
    // One acquire and release of whatever is measured.
    interface Cycle {
        void run() throws Exception;
    }

    static Cycle cycleOf(CuratorFramework client, String kind, String path) {
        if (kind.equals("semaphore")) {
            InterProcessSemaphoreV2 sem =
                new InterProcessSemaphoreV2(client, path, 2);
            return () -> sem.returnLease(sem.acquire());
        }
        InterProcessMutex mutex =
            kind.equals("write")
                ? new InterProcessReadWriteLock(client, path).writeLock()
                : new InterProcessMutex(client, path);
        return () -> {
            mutex.acquire();
            mutex.release();
        };
    }

    static CuratorFramework connect(String hosts) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            hosts, 10000, 15000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            System.err.println("CuratorBench: no ZooKeeper at " + hosts);
            System.exit(1);
        }
        return client;
    }

    // Wait until the semaphore's lock has `n` nodes queued: bounded, as
    // a benchmark that hangs tells nothing.
    static void waitQueued(CuratorFramework client, String locks, int n)
        throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (;;) {
            Stat st = client.checkExists().forPath(locks);
            if ((st == null ? 0 : st.getNumChildren()) == n)
                return;
            if (System.nanoTime() > deadline)
                throw new IllegalStateException(
                    "no " + n + " nodes in " + locks + " after 10 s");
            Thread.sleep(0, 200000);
        }
    }

    static double[] cycles(String hosts, String kind, String path, int n)
        throws Exception {
        try (CuratorFramework client = connect(hosts)) {
            Cycle cycle = cycleOf(client, kind, path);
            double[] us = new double[n];
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                cycle.run();
                us[i] = (System.nanoTime() - t0) / 1e3;
            }
            return us;
        }
    }

    static double[] handoffs(String hosts, String path, int n)
        throws Exception {
        CuratorFramework[] c = { connect(hosts), connect(hosts),
                                 connect(hosts) };
        ExecutorService waiter = Executors.newSingleThreadExecutor();
        try {
            InterProcessSemaphoreV2 filler =
                new InterProcessSemaphoreV2(c[0], path, 2);
            Lease kept = filler.acquire();
            InterProcessSemaphoreV2[] s = {
                new InterProcessSemaphoreV2(c[1], path, 2),
                new InterProcessSemaphoreV2(c[2], path, 2) };
            String locks = ZKPaths.makePath(path, "locks");
            Lease held = s[0].acquire();
            int holder = 0;
            double[] us = new double[n];
            for (int i = 0; i < n; i++) {
                InterProcessSemaphoreV2 next = s[1 - holder];
                Future<Object[]> got = waiter.submit(() -> {
                    Lease l = next.acquire();
                    return new Object[] { l, System.nanoTime() };
                });
                waitQueued(c[0], locks, 1);
                long t0 = System.nanoTime();
                s[holder].returnLease(held);
                Object[] r = got.get(10, TimeUnit.SECONDS);
                held = (Lease)r[0];
                us[i] = ((Long)r[1] - t0) / 1e3;
                holder = 1 - holder;
                waitQueued(c[0], locks, 0); // its lock let go
            }
            s[holder].returnLease(held);
            filler.returnLease(kept);
            return us;
        } finally {
            waiter.shutdownNow();
            for (CuratorFramework client : c)
                client.close();
        }
    }

    static double[] multiHandoffs(String hosts, String path, int n)
        throws Exception {
        CuratorFramework[] c = { connect(hosts), connect(hosts) };
        // Curator's locks belong to the thread that took them: one thread
        // per session, which takes and lets go of its multi-lock.
        ExecutorService[] t = { Executors.newSingleThreadExecutor(),
                                Executors.newSingleThreadExecutor() };
        String a = ZKPaths.makePath(path, "a"), b = ZKPaths.makePath(path, "b");
        try {
            InterProcessMultiLock[] m = {
                new InterProcessMultiLock(c[0], Arrays.asList(a, b)),
                new InterProcessMultiLock(c[1], Arrays.asList(a, b)) };
            t[0].submit(() -> { m[0].acquire(); return null; })
                .get(10, TimeUnit.SECONDS);
            int holder = 0;
            double[] us = new double[n];
            for (int i = 0; i < n; i++) {
                InterProcessMultiLock next = m[1 - holder], held = m[holder];
                Future<Long> got = t[1 - holder].submit(() -> {
                    next.acquire();
                    return System.nanoTime();
                });
                waitQueued(c[0], a, 2);
                long t0 = System.nanoTime();
                t[holder].submit(() -> { held.release(); return null; })
                    .get(10, TimeUnit.SECONDS);
                us[i] = (got.get(10, TimeUnit.SECONDS) - t0) / 1e3;
                holder = 1 - holder;
                waitQueued(c[0], a, 1); // the old holder's node gone
            }
            InterProcessMultiLock last = m[holder];
            t[holder].submit(() -> { last.release(); return null; })
                .get(10, TimeUnit.SECONDS);
            return us;
        } finally {
            for (ExecutorService e : t)
                e.shutdownNow();
            for (CuratorFramework client : c)
                client.close();
        }
    }

    public static void main(String[] args) throws Exception {
        String kind = args.length == 4 ? args[3] : "mutex";
        if ((args.length != 3 && args.length != 4) ||
            !(kind.equals("mutex") || kind.equals("write") ||
              kind.equals("semaphore") || kind.equals("semaphore-handoff") ||
              kind.equals("multilock-handoff"))) {
            System.err.println("usage: CuratorBench HOSTS PATH N "
                               + "[mutex|write|semaphore|semaphore-handoff|"
                               + "multilock-handoff]");
            System.exit(2);
        }
        int n = Integer.parseInt(args[2]);
        double[] us = kind.equals("semaphore-handoff")
                          ? handoffs(args[0], args[1], n)
                      : kind.equals("multilock-handoff")
                          ? multiHandoffs(args[0], args[1], n)
                          : cycles(args[0], kind, args[1], n);
        double[] v = Arrays.copyOfRange(us, n / 10, n);
        String dump = System.getenv("ZKBENCH_SAMPLES");
        if (dump != null && !dump.isEmpty()) {
            StringBuilder sb = new StringBuilder();
            for (double x : v)
                sb.append(String.format("%.1f%n", x));
            java.nio.file.Files.writeString(java.nio.file.Path.of(dump),
                sb.toString(), java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
        }
        Arrays.sort(v);
        double sum = 0;
        for (double x : v)
            sum += x;
        System.out.printf("median_us=%.1f p99_us=%.1f mean_us=%.1f n=%d%n",
                          v[v.length / 2], v[(v.length * 99) / 100],
                          sum / v.length, v.length);
    }
}
