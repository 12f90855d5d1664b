// CuratorBench - Curator's InterProcessMutex (or the write lock of its
// InterProcessReadWriteLock) acquire/release in a loop, in one JVM: the
// in-process library zklockfs is compared with.
//
//   java -cp CLASSPATH CuratorBench HOSTS PATH N [mutex|write]
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
import org.apache.curator.retry.RetryOneTime;

public class CuratorBench {
    public static void main(String[] args) throws Exception {
        String kind = args.length == 4 ? args[3] : "mutex";
        if ((args.length != 3 && args.length != 4) ||
            !(kind.equals("mutex") || kind.equals("write"))) {
            System.err.println("usage: CuratorBench HOSTS PATH N [mutex|write]");
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
            InterProcessMutex mutex =
                kind.equals("write")
                    ? new InterProcessReadWriteLock(client, args[1]).writeLock()
                    : new InterProcessMutex(client, args[1]);
            double[] us = new double[n];
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                mutex.acquire();
                mutex.release();
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
