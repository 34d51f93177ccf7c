//===- MpiControl.cpp - The control plane over MPI ------------------------===//
//
// See MpiControl.h. Each call maps onto one MPI collective on the group's
// private communicator.
//
//===----------------------------------------------------------------------===//

#include "MpiControl.h"
#include "Backend.h"

#include "meshrt/Error.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

class MpiControl final : public ControlGroup {
public:
  explicit MpiControl(MPI_Comm C) : C(C) { adoptMpiComm(C, Rank, Size); }
  ~MpiControl() override { releaseMpiComm(C); }
  const char *kind() const override { return "mpi"; }

  void allReduce(int64_t *Data, size_t N, bool Max, const char *What) override {
    checkMpi(MPI_Allreduce(MPI_IN_PLACE, Data, int(N), MPI_INT64_T,
                           Max ? MPI_MAX : MPI_MIN, C),
             (std::string("MPI_Allreduce (") + What + ")").c_str());
  }
  void broadcast(void *Buf, size_t Bytes, int64_t Root,
                 const char *What) override {
    checkMpi(MPI_Bcast(Buf, int(Bytes), MPI_BYTE, int(Root), C),
             (std::string("MPI_Bcast (") + What + ")").c_str());
  }
  void allGather(const void *Mine, void *All, size_t Bytes,
                 const char *What) override {
    checkMpi(
        MPI_Allgather(Mine, int(Bytes), MPI_BYTE, All, int(Bytes), MPI_BYTE, C),
        (std::string("MPI_Allgather (") + What + ")").c_str());
  }
  std::unique_ptr<ControlGroup> split(int64_t Color, int64_t Key,
                                      const char *What) override {
    if (Color > INT_MAX || Key > INT_MAX || Key < INT_MIN)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "MPI_Comm_split takes int colors and keys");
    MPI_Comm New;
    checkMpi(MPI_Comm_split(C, Color < 0 ? MPI_UNDEFINED : int(Color), int(Key),
                            &New),
             (std::string("MPI_Comm_split (") + What + ")").c_str());
    if (New == MPI_COMM_NULL)
      return nullptr;
    return std::make_unique<MpiControl>(New);
  }
  std::unique_ptr<ControlGroup> duplicate(const char *What) override {
    return makeMpiControl(C, What);
  }
  int64_t nodeLocalRank(const char *What) override {
    MPI_Comm Local;
    checkMpi(
        MPI_Comm_split_type(C, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &Local),
        (std::string("MPI_Comm_split_type (") + What + ")").c_str());
    int R = 0;
    MPI_Comm_rank(Local, &R);
    MPI_Comm_free(&Local);
    return R;
  }
  bool fence(double Bound) noexcept override {
    // A non-blocking barrier, polled, which an abort ends cleanly.
    MPI_Request Req;
    if (MPI_Ibarrier(C, &Req) != MPI_SUCCESS)
      return true;
    using Clock = std::chrono::steady_clock;
    Clock::time_point Start = Clock::now();
    std::chrono::microseconds Nap(50);
    for (;;) {
      int Done = 0;
      if (MPI_Test(&Req, &Done, MPI_STATUS_IGNORE) != MPI_SUCCESS || Done)
        return true;
      double Waited =
          std::chrono::duration<double>(Clock::now() - Start).count();
      if (Bound > 0 && Waited >= Bound)
        return false;
      std::this_thread::sleep_for(Nap);
      Nap = std::min(Nap * 2, std::chrono::microseconds(20000));
    }
  }

  MPI_Comm C;
};

} // namespace

std::unique_ptr<ControlGroup> meshrt::detail::makeMpiControl(MPI_Comm Parent,
                                                             const char *What) {
  MPI_Comm C;
  checkMpi(MPI_Comm_dup(Parent, &C),
           (std::string("MPI_Comm_dup (") + What + ")").c_str());
  return std::make_unique<MpiControl>(C);
}

MPI_Comm meshrt::detail::mpiCommOf(ControlGroup &G) {
  if (auto *M = dynamic_cast<MpiControl *>(&G))
    return M->C;
  return MPI_COMM_NULL;
}
