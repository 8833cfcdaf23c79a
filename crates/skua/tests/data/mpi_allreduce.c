/* Skua's MPI test program: an allreduce across all ranks.
 * Every rank contributes (rank + 1) and rank * rank; rank 0 writes the
 * sums, the number of ranks and, one per line, the host each rank ran on
 * to the file named by argv[1]. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    long mine[2], sums[2];
    char host[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(host, 0, sizeof host);
    MPI_Get_processor_name(host, &len);

    mine[0] = rank + 1;
    mine[1] = (long)rank * rank;
    MPI_Allreduce(mine, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    char *all = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    if (!all) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(argc > 1 ? argv[1] : "allreduce.out", "w");
        if (!f) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        fprintf(f, "ranks %d\nsum %ld\nsquares %ld\n", size, sums[0], sums[1]);
        for (int i = 0; i < size; i++) {
            fprintf(f, "host %d %s\n", i, all + (size_t)i * MPI_MAX_PROCESSOR_NAME);
        }
        fclose(f);
    }
    free(all);
    MPI_Finalize();
    return 0;
}
