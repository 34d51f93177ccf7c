/* bench/lowering/mpi_count.c: counts, per process, the MPI calls a program
 * makes, through MPI's profiling interface (each MPI_X below counts and calls
 * PMPI_X). Preloaded by run.sh (mpirun -x LD_PRELOAD=mpi_count.so), so it
 * sees the calls of compiled code and of libmeshrt alike, not those Open MPI
 * makes internally. At MPI_Finalize each rank prints one line to stderr:
 *   mpi_count rank R Comm_split N Comm_dup N Comm_free N Comm_rank N Allreduce
 * N
 */
#include <mpi.h>
#include <stdio.h>

static long nSplit, nDup, nFree, nRank, nAllreduce;

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
  ++nSplit;
  return PMPI_Comm_split(comm, color, key, out);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) {
  ++nDup;
  return PMPI_Comm_dup(comm, out);
}
int MPI_Comm_free(MPI_Comm *comm) {
  ++nFree;
  return PMPI_Comm_free(comm);
}
int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  ++nRank;
  return PMPI_Comm_rank(comm, rank);
}
int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm) {
  ++nAllreduce;
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}
int MPI_Finalize(void) {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr,
          "mpi_count rank %d Comm_split %ld Comm_dup %ld Comm_free %ld "
          "Comm_rank %ld Allreduce %ld\n",
          rank, nSplit, nDup, nFree, nRank, nAllreduce);
  return PMPI_Finalize();
}
