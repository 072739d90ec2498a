package io.mn4j.communicator;

import java.util.Arrays;
import java.util.stream.Collectors;
import mpi.Group;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;

/**
 * Who belongs to a communicator, in world ranks, and a name for it that every member computes
 * alike: what the {@link Watchdog} needs to tell which ranks have not reached a collective. Each
 * member counts the collectives started on it, so that ranks can compare where they are.
 */
final class Members {
    /** The name of the world communicator. */
    static final String WORLD = "world";

    /** Alike on every member: "world", or the parent's id, its split's number and the color. */
    final String id;
    private final int[] worldRanks;
    private final int rank;
    /** Collectives started on this communicator; one thread at a time calls them, as in MPI. */
    private volatile long collectives;

    private Members(String id, int[] worldRanks, int rank) {
        this.id = id;
        this.worldRanks = worldRanks;
        this.rank = rank;
    }

    /** The members of {@code comm}, named {@code id}. */
    static Members of(Intracomm comm, String id) throws MPIException {
        int size = comm.getSize();
        int[] ranks = new int[size];
        Arrays.setAll(ranks, i -> i);
        Group group = comm.getGroup();
        Group world = MPI.COMM_WORLD.getGroup();
        int[] inWorld = Group.translateRanks(group, ranks, world);
        group.free();
        world.free();
        return new Members(id, inWorld, comm.getRank());
    }

    /** The id of a communicator split off this one with {@code color} by its latest collective. */
    String childId(int color) {
        return id + "/" + collectives + ":" + color;
    }

    /** Counts a collective that starts now; returns its number on this communicator (from 1). */
    long startCollective() {
        long n = collectives + 1; // one thread at a time per communicator: no lost update
        collectives = n;
        return n;
    }

    /** The world rank of member {@code rank}. */
    int worldRank(int rank) {
        return worldRanks[rank];
    }

    /** This process's rank in the communicator. */
    int rank() {
        return rank;
    }

    int size() {
        return worldRanks.length;
    }

    /** "the world communicator" or "a communicator of world ranks 0, 2". */
    String describe() {
        if (WORLD.equals(id)) {
            return "the world communicator";
        }
        return "a communicator of world ranks " + Arrays.stream(worldRanks).mapToObj(String::valueOf)
                .collect(Collectors.joining(", "));
    }
}
