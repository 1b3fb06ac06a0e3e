// A JVM takes SIGSEGV on purpose: compiled code's implicit null checks and
// safepoint polls fault, and HotSpot's handler turns them into a
// NullPointerException or a safepoint.  Under the shim its handler runs
// behind the shim's (preload/fault.c); the answers must not change.
import java.io.File;

public class NullChecks {
    static int first(int[] a) { return a[0]; }

    public static void main(String[] args) {
        int npe = 0, found = 0;
        for (int i = 0; i < 200000; i++) {
            try {
                first((i % 2 == 0) ? null : new int[] { 1 });
            } catch (NullPointerException e) {
                npe++;
            }
        }
        for (int i = 0; i < 1000; i++)
            if (new File(args[0]).exists() && !new File(args[0] + ".absent").exists())
                found++;
        System.out.println("npe=" + npe + " found=" + found);
    }
}
