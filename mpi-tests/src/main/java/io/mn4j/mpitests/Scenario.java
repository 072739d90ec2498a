package io.mn4j.mpitests;

import io.mn4j.communicator.Communicator;

/** One distributed test case, run by every rank of a job. */
@FunctionalInterface
public interface Scenario {
    void run(Communicator world, Check check) throws Exception;
}
