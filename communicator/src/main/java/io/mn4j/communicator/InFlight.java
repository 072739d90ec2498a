package io.mn4j.communicator;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Nonblocking transfers that MPI may still read or write, kept reachable until they complete.
 * JavaCPP frees a tensor whose Java object became unreachable, whatever its reference count: a
 * program that drops a send or receive handle before completing it would otherwise have MPI use
 * freed memory. A transfer never completed stays here for good, as MPI keeps a request never
 * completed.
 */
final class InFlight {
    private static final Set<Object> TRANSFERS = ConcurrentHashMap.newKeySet();

    private InFlight() {
    }

    /** {@code transfer} holds what MPI uses; compared by identity. */
    static void started(Object transfer) {
        TRANSFERS.add(transfer);
        if (transfer instanceof SendHandle || transfer instanceof RecvHandle) {
            TransferProgress.wake();
        }
    }

    /** The nonblocking sends and receives in flight now. */
    static Object[] handles() {
        return TRANSFERS.stream().filter(t -> t instanceof SendHandle || t instanceof RecvHandle).toArray();
    }

    static void completed(Object transfer) {
        TRANSFERS.remove(transfer);
    }
}
