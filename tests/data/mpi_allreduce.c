/* An MPI program for tests/test_runner_mpich.py and tests/test_runner_openmpi.py: every rank adds its rank over
   MPI_COMM_WORLD, then a buffer of argv[1] doubles (large enough to go the way large
   messages do), and prints where it ran. With argv[2] = "abort", rank 1 calls
   MPI_Abort(MPI_COMM_WORLD, 5) first when it runs in a worker, as a rank that meets an
   error should; with "exit", it exits with code 3 without MPI_Abort a second after a
   barrier (as a rank failing in its first step: the runner's agent looks for ranks every
   0.05 s and may miss one that ends at once), which leaves MPICH's mpiexec waiting for ever
   for it (the runner's fail fast ends such a job).
   It ends with a barrier, tells hydra it is done, and _exit(0), not MPI_Finalize: ranks in
   two instances talk over UCX's TCP transport (each instance has its own /dev/shm), which
   now and then leaves MPI_Finalize waiting for ever once the work is done
   (openucx/ucx#8738; MPICH 4.0.2 and UCX 1.13 hung so in about 1 run in 10 outside the
   console too). README, "MPICH". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name) {
    const char *value = getenv(name);
    return value ? value : "unset";
}

/* What MPI_Finalize's PMI_Finalize tells hydra's proxy (PMI-1 over the descriptor hydra
   passes in PMI_FD), without UCX's teardown. A rank whose PMI connection closes without it is
   taken for one that died, and the proxy kills the ranks still running: on a busy machine the
   other rank, still leaving the last barrier, was killed (exit code 1, or 9) and the job
   failed, about 1 run in 30 (outside the console too; 0 in 200 with this). */
static void pmi_finalize(void) {
    const char *fd_text = getenv("PMI_FD");
    if (!fd_text) return;
    int fd = atoi(fd_text);
    const char request[] = "cmd=finalize\n";
    if (write(fd, request, sizeof request - 1) != (ssize_t)(sizeof request - 1)) return;
    char answer[64]; /* cmd=finalize_ack */
    size_t got = 0;
    while (got < sizeof answer - 1) {
        ssize_t n = read(fd, answer + got, sizeof answer - 1 - got);
        if (n <= 0) break;
        got += n;
        if (answer[got - 1] == '\n') break;
    }
}

int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && !strcmp(argv[2], "abort") && rank == 1 && !strcmp(env("AIHC_ROLE"), "worker")) {
        printf("rank 1 aborts in %s-%s\n", env("AIHC_ROLE"), env("AIHC_ROLE_INDEX"));
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    /* After a barrier: a rank that ends while its peer's MPI_Init is still exchanging
       addresses fails that peer's MPI_Init ("Destination is unreachable"), and mpiexec then
       ends the job itself. */
    if (argc > 2 && !strcmp(argv[2], "exit")) MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && !strcmp(argv[2], "exit") && rank == 1 && !strcmp(env("AIHC_ROLE"), "worker")) {
        sleep(1);
        printf("rank 1 exits in %s-%s\n", env("AIHC_ROLE"), env("AIHC_ROLE_INDEX"));
        fflush(stdout);
        exit(3);
    }
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    long n = argc > 1 ? atol(argv[1]) : 1;
    double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) in[i] = rank + 1;
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d in %s-%s cards %s sums %d %.0f\n", rank, size, env("AIHC_ROLE"),
           env("AIHC_ROLE_INDEX"), env("CUDA_VISIBLE_DEVICES"), sum, out[n - 1]);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
#ifdef OPEN_MPI
    /* Open MPI's mpirun takes a rank that exits without MPI_Finalize for a failed one
       (tests/test_runner_openmpi.py); its TCP transport has no such hang. */
    MPI_Finalize();
    return 0;
#else
    pmi_finalize();
    _exit(0);
#endif
}
