// CuratorBench - Curator's InterProcessMutex (or the write lock of its
// InterProcessReadWriteLock, or a lease of its InterProcessSemaphoreV2 of
// 2 leases) acquire/release in a loop, in one JVM: the in-process library
// zklockfs is compared with.
//
//   java -cp CLASSPATH CuratorBench HOSTS PATH N [mutex|write|semaphore]
//
// Prints the line bench/stats.c prints: median_us p99_us mean_us n, the
// first tenth of the cycles left out (JIT warm-up, connection); appends
// the samples to $ZKBENCH_SAMPLES if set, as stats.c does.
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
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

    public static void main(String[] args) throws Exception {
        String kind = args.length == 4 ? args[3] : "mutex";
        if ((args.length != 3 && args.length != 4) ||
            !(kind.equals("mutex") || kind.equals("write") ||
              kind.equals("semaphore"))) {
            System.err.println(
                "usage: CuratorBench HOSTS PATH N [mutex|write|semaphore]");
            System.exit(2);
        }
        int n = Integer.parseInt(args[2]);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                args[0], 10000, 15000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
                System.err.println("CuratorBench: no ZooKeeper at " + args[0]);
                System.exit(1);
            }
            Cycle cycle = cycleOf(client, kind, args[1]);
            double[] us = new double[n];
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                cycle.run();
                us[i] = (System.nanoTime() - t0) / 1e3;
            }
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
}
