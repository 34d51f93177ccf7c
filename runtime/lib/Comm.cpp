//===- Comm.cpp - Checked, watched collectives on a communicator handle ---===//
//
// The generic half of every collective: argument checks that do not depend on
// the backend (counts, dtypes, reductions, roots, aliasing), the translation
// of permute offsets into a (destination, source) pair, the statistics, the
// collective trace (MESHRT_TRACE, see Trace.h), the cross-rank comparison of
// the call (MESHRT_CHECK_COLLECTIVES, see CollectiveCheck.h) and the
// watchdog scope around the backend call. Everything that can be checked
// locally is checked before any communication, so an invalid call fails on
// every rank the same way instead of leaving peers waiting.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

Comm::Comm(Context &Ctx, Mesh &M, std::string LabelIn, GroupPosition Pos,
           std::vector<int64_t> Members, bool Member, meshrt_backend Kind)
    : Ctx(Ctx), TheMesh(M), Pos(Pos), Member(Member), Kind(Kind),
      Members(std::move(Members)), Label(std::move(LabelIn)) {
  handles::add(this);
}

Comm::~Comm() { handles::remove(this); }

void Comm::attach(std::shared_ptr<BackendComm> I, CollectiveCheck *Checker,
                  const uint8_t *Ops) {
  Impl = std::move(I);
  Fast = Impl.get();
  Check = Checker;
  if (Check)
    CheckId = CollectiveCheck::commId(Label);
  Dog = &Ctx.watchdog();
  std::memcpy(SupportedOps, Ops, sizeof(SupportedOps));
  Trace = Ctx.trace();
  if (Trace) {
    TraceGroup = " group=";
    for (size_t I = 0; I < Members.size(); ++I)
      TraceGroup += (I ? "," : "") + std::to_string(Members[I]);
  }
}

void Comm::detach() {
  Fast = nullptr;
  Check = nullptr;
  Impl.reset();
}

std::string Comm::describe() const {
  if (!Member)
    return Label + " (" + TheMesh.notMemberMessage(Ctx.worldRank()) + ")";
  std::string S = Label + " (group rank " + std::to_string(rank()) + " of " +
                  std::to_string(size()) + ": world ranks ";
  size_t Shown = std::min<size_t>(Members.size(), 16);
  for (size_t I = 0; I < Shown; ++I)
    S += (I ? ", " : "") + std::to_string(Members[I]);
  if (Shown < Members.size())
    S += ", ...";
  return S + ")";
}

void Comm::fail(meshrt_status S, const char *Op, const std::string &Msg) const {
  throw Error(S, std::string(Op) + " on " + Label + ": " + Msg);
}

void Comm::traceCall(const char *Fmt, ...) const {
  char Buf[160];
  va_list Args;
  va_start(Args, Fmt);
  std::vsnprintf(Buf, sizeof(Buf), Fmt, Args);
  va_end(Args);
  Trace->write(Buf + TraceGroup);
}

void Comm::verify(const char *Op, CollectiveSignature S) const {
  S.CommId = CheckId;
  WatchScope W(*Dog, Op, this, S.Count, S.DType, S.RedOp);
  if (std::optional<std::string> Msg = Check->verify(S, Label, Members))
    fail(MESHRT_ERROR_COLLECTIVE_MISMATCH, Op, *Msg);
}

void Comm::requireLive(const char *Op) const {
  if (!Fast)
    requireUsable(Op);
}

void Comm::requireUsable(const char *Op) const {
  if (Ctx.finalized())
    fail(MESHRT_ERROR_NOT_INITIALIZED, Op, "the runtime was finalized");
  if (!Member)
    fail(MESHRT_ERROR_NOT_MEMBER, Op,
         TheMesh.notMemberMessage(Ctx.worldRank()) +
             "; a process outside a mesh takes part in none of its "
             "collectives");
  if (!Fast)
    fail(MESHRT_ERROR_NOT_INITIALIZED, Op, "the runtime was finalized");
}

void Comm::checkBuffersSlow(const char *Op, const void *Send, const void *Recv,
                            int64_t Count, meshrt_dtype T, int64_t Blocks,
                            bool AllowInPlace) const {
  if (!Fast)
    requireUsable(Op);
  int64_t Elem = dtypeSize(T);
  if (Elem == 0)
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "invalid dtype " + std::to_string(int(T)));
  if (Count < 0)
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "negative count " + std::to_string(Count));
  if (Count == 0)
    return;
  if (!Send || !Recv)
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op, "null buffer");
  int64_t Bytes;
  if (__builtin_mul_overflow(Count, Blocks * Elem, &Bytes))
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "count " + std::to_string(Count) + " overflows the buffer size");
  if (!AllowInPlace && Send == Recv)
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "send and recv are the same buffer; this collective is not in "
         "place");
}

void Comm::checkReductionSlow(const char *Op, meshrt_dtype T,
                              meshrt_reduce_op R) const {
  if (unsigned(R) >= unsigned(kNumReduceOps))
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "invalid reduction " + std::to_string(int(R)));
  bool Bitwise = R == MESHRT_BAND || R == MESHRT_BOR || R == MESHRT_BXOR;
  if (Bitwise && !isIntegerDType(T))
    fail(MESHRT_ERROR_UNSUPPORTED, Op,
         std::string("reduction '") + reduceOpName(R) +
             "' is not defined for dtype " + dtypeName(T) +
             " (bitwise reductions need i8, i32, i64 or u8)");
  try {
    Ctx.backend(Kind).checkReduction(T, R);
  } catch (const Error &E) {
    fail(E.status(), Op, E.what());
  }
  fail(MESHRT_ERROR_UNSUPPORTED, Op,
       std::string("reduction '") + reduceOpName(R) + "' on " + dtypeName(T) +
           " is not supported");
}

void Comm::allReduce(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op) {
  checkBuffers("all_reduce", Send, Recv, Count, T, 1, /*AllowInPlace=*/true);
  checkReduction("all_reduce", T, Op);
  if (__builtin_expect(Check != nullptr, 0))
    verify("all_reduce", {CollectiveKind::AllReduce, T, Op, 0, Count});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("all_reduce %s count=%lld op=%s", dtypeName(T), (long long)Count,
              reduceOpName(Op));
  WatchScope W(*Dog, "all_reduce", this, Count, T, Op);
  Fast->allReduce(Send, Recv, Count, T, Op);
}

void Comm::allGather(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T) {
  checkBuffers("all_gather", Send, Recv, Count, T, size(), false);
  if (__builtin_expect(Check != nullptr, 0))
    verify("all_gather", {CollectiveKind::AllGather, T, -1, 0, Count});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("all_gather %s count=%lld", dtypeName(T), (long long)Count);
  WatchScope W(*Dog, "all_gather", this, Count, T);
  Fast->allGather(Send, Recv, Count, T);
}

void Comm::reduceScatter(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype T, meshrt_reduce_op Op) {
  checkBuffers("reduce_scatter", Send, Recv, Count, T, size(), false);
  checkReduction("reduce_scatter", T, Op);
  if (__builtin_expect(Check != nullptr, 0))
    verify("reduce_scatter", {CollectiveKind::ReduceScatter, T, Op, 0, Count});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("reduce_scatter %s count=%lld op=%s", dtypeName(T),
              (long long)Count, reduceOpName(Op));
  WatchScope W(*Dog, "reduce_scatter", this, Count, T, Op);
  Fast->reduceScatter(Send, Recv, Count, T, Op);
}

/// The padded collectives' complaint about `Valid`, empty where it lies in
/// [0, n * Count].
static std::string invalidValid(int64_t Count, int64_t N, int64_t Valid) {
  if (Valid >= 0 && Valid <= Count * N)
    return {};
  return "valid " + std::to_string(Valid) + " is outside [0, " +
         std::to_string(Count * N) + "], the " + std::to_string(N) +
         " blocks of " + std::to_string(Count) + " elements";
}

void Comm::allGatherPadded(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T) {
  const char *Op = "all_gather_padded";
  checkBuffers(Op, Send, Recv, Count, T, size(), false);
  if (std::string E = invalidValid(Count, size(), Valid); !E.empty())
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op, E);
  if (__builtin_expect(Check != nullptr, 0))
    verify(Op, {CollectiveKind::AllGatherPadded, T, -1, 0, Count, -1, Valid});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("all_gather_padded %s count=%lld valid=%lld", dtypeName(T),
              (long long)Count, (long long)Valid);
  WatchScope W(*Dog, Op, this, Count, T);
  if (Valid == Count * size())
    return Fast->allGather(Send, Recv, Count, T);
  Fast->allGatherPadded(Send, Recv, Count, Valid, T);
}

void Comm::reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                               int64_t Valid, meshrt_dtype T,
                               meshrt_reduce_op Op) {
  const char *Name = "reduce_scatter_padded";
  checkBuffers(Name, Send, Recv, Count, T, size(), false);
  checkReduction(Name, T, Op);
  if (std::string E = invalidValid(Count, size(), Valid); !E.empty())
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Name, E);
  if (__builtin_expect(Check != nullptr, 0))
    verify(Name,
           {CollectiveKind::ReduceScatterPadded, T, Op, 0, Count, -1, Valid});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("reduce_scatter_padded %s count=%lld valid=%lld op=%s",
              dtypeName(T), (long long)Count, (long long)Valid,
              reduceOpName(Op));
  WatchScope W(*Dog, Name, this, Count, T, Op);
  if (Valid == Count * size())
    return Fast->reduceScatter(Send, Recv, Count, T, Op);
  Fast->reduceScatterPadded(Send, Recv, Count, Valid, T, Op);
}

void Comm::allToAll(const void *Send, void *Recv, int64_t Count,
                    meshrt_dtype T) {
  checkBuffers("all_to_all", Send, Recv, Count, T, size(), false);
  if (__builtin_expect(Check != nullptr, 0))
    verify("all_to_all", {CollectiveKind::AllToAll, T, -1, 0, Count});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("all_to_all %s count=%lld", dtypeName(T), (long long)Count);
  WatchScope W(*Dog, "all_to_all", this, Count, T);
  Fast->allToAll(Send, Recv, Count, T);
}

void Comm::allToAllPadded(const void *Send, void *Recv, int64_t Count,
                          int64_t Valid, meshrt_dtype T, int32_t Side) {
  const char *Op = "all_to_all_padded";
  checkBuffers(Op, Send, Recv, Count, T, size(), false);
  if (std::string E = invalidValid(Count, size(), Valid); !E.empty())
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op, E);
  if (Side != MESHRT_PADDED_SPLIT && Side != MESHRT_PADDED_CONCAT)
    fail(MESHRT_ERROR_INVALID_ARGUMENT, Op,
         "side " + std::to_string(Side) +
             " is neither MESHRT_PADDED_SPLIT (0) nor MESHRT_PADDED_CONCAT "
             "(1)");
  if (__builtin_expect(Check != nullptr, 0))
    verify(Op, {CollectiveKind::AllToAllPadded, T, -1, Side, Count, -1, Valid});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("all_to_all_padded %s count=%lld valid=%lld side=%d",
              dtypeName(T), (long long)Count, (long long)Valid, int(Side));
  WatchScope W(*Dog, Op, this, Count, T);
  if (Valid == Count * size())
    return Fast->allToAll(Send, Recv, Count, T);
  Fast->allToAllPadded(Send, Recv, Count, Valid, T, Side);
}

void Comm::broadcast(void *Buf, int64_t Count, meshrt_dtype T, int64_t Root) {
  checkBuffers("broadcast", Buf, Buf, Count, T, 1, true);
  if (Root < 0 || Root >= size())
    fail(MESHRT_ERROR_INVALID_ARGUMENT, "broadcast",
         "root " + std::to_string(Root) +
             " is not a group rank (the group has " + std::to_string(size()) +
             " members)");
  if (__builtin_expect(Check != nullptr, 0))
    verify("broadcast", {CollectiveKind::Broadcast, T, -1, 0, Count, Root});
  if (Count == 0)
    return;
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("broadcast %s count=%lld root=%lld", dtypeName(T),
              (long long)Count, (long long)Root);
  WatchScope W(*Dog, "broadcast", this, Count, T);
  Fast->broadcast(Buf, Count, T, Root);
}

void Comm::permute(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
                   int64_t Offset, int32_t Flags) {
  checkBuffers("permute", Send, Recv, Count, T, 1, false);
  if (Flags & ~int32_t(MESHRT_PERMUTE_WRAP | MESHRT_PERMUTE_ZERO_FILL))
    fail(MESHRT_ERROR_INVALID_ARGUMENT, "permute",
         "unknown flags " + std::to_string(Flags));
  if (__builtin_expect(Check != nullptr, 0))
    verify("permute",
           {CollectiveKind::Permute, T, -1, Flags, Count, -1, Offset});
  if (Count == 0)
    return;
  int64_t N = size(), G = rank();
  int64_t Dest = -1, Source = -1;
  if (Flags & MESHRT_PERMUTE_WRAP) {
    int64_t K = ((Offset % N) + N) % N;
    Dest = (G + K) % N;
    Source = (G - K + N) % N;
  } else if (Offset < N && Offset > -N) {
    if (G + Offset >= 0 && G + Offset < N)
      Dest = G + Offset;
    if (G - Offset >= 0 && G - Offset < N)
      Source = G - Offset;
  }
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("permute %s count=%lld offset=%lld flags=%d to=%lld from=%lld",
              dtypeName(T), (long long)Count, (long long)Offset, int(Flags),
              (long long)Dest, (long long)Source);
  WatchScope W(*Dog, "permute", this, Count, T);
  Fast->sendRecv(Send, Dest, Recv, Source, Count, T,
                 (Flags & MESHRT_PERMUTE_ZERO_FILL) != 0);
}

void Comm::barrier() {
  if (!Fast)
    requireUsable("barrier");
  if (__builtin_expect(Check != nullptr, 0))
    verify("barrier", {CollectiveKind::Barrier});
  ++Collectives;
  if (__builtin_expect(Trace != nullptr, 0))
    traceCall("barrier");
  WatchScope W(*Dog, "barrier", this);
  Fast->barrier();
}
