// FileChannelLocks - one party of a lock library test (test_libraries.py)
// in Java: a FileChannel lock on PATH, taken as a Java program takes it.
//
//   java -cp CLASSES FileChannelLocks PATH HOW
//
// HOW: lock      FileChannel.lock(): the whole file, waiting
//      trylock   tryLock(): the whole file, or nothing at once
//      range     lock(0, 10, false): ten bytes, exclusive, waiting
//      tryrange  tryLock(0, 10, false)
//      upgrade   lock(0, 10, true), then lock(20, 10, false): a write
//                range over its own read range, which zklockfs refuses
//
// Prints "held" once it holds, or "busy" if a try found the lock taken,
// or "error " and the exception (a range on zklockfs before it took
// ranges: "java.io.IOException: Invalid argument").  Holds until stdin
// ends, then releases and prints "released": libparty.py's protocol.
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

public class FileChannelLocks {
    public static void main(String[] args) throws IOException {
        try (FileChannel ch = FileChannel.open(Paths.get(args[0]),
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            FileLock lock;
            try {
                switch (args[1]) {
                case "lock": lock = ch.lock(); break;
                case "trylock": lock = ch.tryLock(); break;
                case "range": lock = ch.lock(0, 10, false); break;
                case "tryrange": lock = ch.tryLock(0, 10, false); break;
                case "upgrade":
                    lock = ch.lock(0, 10, true);
                    ch.lock(20, 10, false);
                    break;
                default: throw new IllegalArgumentException(args[1]);
                }
            } catch (IOException e) {
                System.out.println("error " + e);
                return;
            }
            if (lock == null) {
                System.out.println("busy");
                return;
            }
            System.out.println("held");
            while (System.in.read() != -1) {
            }
            lock.release();
            System.out.println("released");
        }
    }
}
