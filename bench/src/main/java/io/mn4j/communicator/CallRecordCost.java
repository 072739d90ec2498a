package io.mn4j.communicator;

import java.util.Locale;

/**
 * What the watchdog's record adds to every communicator call: the call gate alone
 * ({@code MpiCalls.enter}/{@code leave}) against the gate with the record of what the call waits for,
 * in one thread, no MPI. In this package because the gate is not public.
 * {@code bench/run io.mn4j.communicator.CallRecordCost [calls per round]}.
 */
public final class CallRecordCost {
    private CallRecordCost() {
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 50_000_000;
        for (int round = 1; round <= 5; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                MpiCalls.enter();
                MpiCalls.leave();
            }
            long t1 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                MpiCalls.enter("recv", null, null, 1, 7);
                MpiCalls.leaveWatched();
            }
            long t2 = System.nanoTime();
            System.out.printf(Locale.ROOT, "round %d: gate %.1f ns, gate and record %.1f ns a call%n", round,
                    (t1 - t0) / (double) n, (t2 - t1) / (double) n);
        }
    }
}
