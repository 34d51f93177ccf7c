//===- main.cpp - scenario 4: Ulysses attention against one process -------===//
//
// Host driver of ulysses.mlir. Every rank builds the same data: for each of
// the dp = (number of processes) / 4 replicas a sequence of 16 tokens (q, k,
// v of 4 heads of dimension 8), and one projection Wo. Rank r is device
// (r / 4, r % 4) of the ("data_parallel", "sequence_parallel") mesh and gets
// tokens [4 (r % 4), 4 (r % 4) + 4) of replica r / 4. The compiled @ulysses
// returns this device's attention output, the gradient of Wo (summed over the
// sequence, averaged over the replicas) and the loss; this file computes the
// same, unsharded, on one process in double precision and compares.
//
// Tolerance: |got - want| <= 1e-6 + 1e-5 |want| (float32 softmax attention
// against float64).
//
//   mpirun -n 8 mesh-scenario-ulysses     (or any multiple of 4: dp is `?`)
//
//===----------------------------------------------------------------------===//

#include "../common/Scenario.h"

using scenario::MemRef;

namespace {
constexpr int64_t Seq = 16, Heads = 4, Dim = 8, Emb = 8, SP = 4;
constexpr int64_t LocalSeq = Seq / SP;
constexpr double Atol = 1e-6, Rtol = 1e-5;

struct Result {
  MemRef<float, 3> o;    // 4x4x8
  MemRef<float, 3> grad; // 4x8x8
  MemRef<float, 1> loss; // 1
  int64_t dp, dpSize, sp;
};

/// Unsharded attention of one replica: o[s, h, :] for all 16 tokens.
std::vector<double> attention(const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v) {
  auto at = [](int64_t s, int64_t h, int64_t d) {
    return (s * Heads + h) * Dim + d;
  };
  std::vector<double> o(Seq * Heads * Dim, 0.0);
  for (int64_t h = 0; h < Heads; ++h)
    for (int64_t i = 0; i < Seq; ++i) {
      double scores[Seq], max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < Seq; ++j) {
        double s = 0;
        for (int64_t d = 0; d < Dim; ++d)
          s += double(q[at(i, h, d)]) * k[at(j, h, d)];
        scores[j] = s / std::sqrt(double(Dim));
        max = std::max(max, scores[j]);
      }
      for (int64_t j = 0; j < Seq; ++j)
        sum += scores[j] = std::exp(scores[j] - max);
      for (int64_t j = 0; j < Seq; ++j)
        for (int64_t d = 0; d < Dim; ++d)
          o[at(i, h, d)] += scores[j] / sum * v[at(j, h, d)];
    }
  return o;
}
} // namespace

extern "C" void _mlir_ciface_ulysses(Result *, MemRef<float, 3> *q,
                                     MemRef<float, 3> *k, MemRef<float, 3> *v,
                                     MemRef<float, 3> *wo);

int main() {
  mesh_module_init();
  int status = 0;
  {
    scenario::World world;
    scenario::Checks check;
    const int64_t rank = world.rank();
    const int64_t dpSize = world.size() / SP;
    const int64_t myDp = rank / SP, mySp = rank % SP;

    // Data of every replica, and the shared projection.
    scenario::Lcg rng(4);
    const size_t perSeq = size_t(Seq * Heads * Dim);
    std::vector<std::vector<float>> q, k, v;
    for (int64_t d = 0; d < dpSize; ++d) {
      q.push_back(rng.floats(perSeq, -1, 1));
      k.push_back(rng.floats(perSeq, -1, 1));
      v.push_back(rng.floats(perSeq, -1, 1));
    }
    std::vector<float> wo = rng.floats(size_t(Heads * Dim * Emb), -0.5, 0.5);

    // The reference: every replica unsharded, gradient averaged over them.
    std::vector<double> myO, grad(size_t(Heads * Dim * Emb), 0.0);
    double loss = 0;
    for (int64_t d = 0; d < dpSize; ++d) {
      std::vector<double> o = attention(q[d], k[d], v[d]);
      for (int64_t s = 0; s < Seq; ++s) {
        double y[Emb] = {};
        for (int64_t e = 0; e < Emb; ++e)
          for (int64_t hd = 0; hd < Heads * Dim; ++hd)
            y[e] += o[s * Heads * Dim + hd] * wo[hd * Emb + e];
        for (int64_t e = 0; e < Emb; ++e) {
          loss += 0.5 * y[e] * y[e] / double(dpSize);
          for (int64_t hd = 0; hd < Heads * Dim; ++hd)
            grad[hd * Emb + e] +=
                o[s * Heads * Dim + hd] * y[e] / double(dpSize);
        }
      }
      if (d == myDp)
        myO.assign(o.begin() + mySp * LocalSeq * Heads * Dim,
                   o.begin() + (mySp + 1) * LocalSeq * Heads * Dim);
    }

    // This device's tokens.
    auto slice = [&](std::vector<float> &all) {
      return std::vector<float>(all.begin() + mySp * LocalSeq * Heads * Dim,
                                all.begin() +
                                    (mySp + 1) * LocalSeq * Heads * Dim);
    };
    std::vector<float> myQ = slice(q[myDp]), myK = slice(k[myDp]),
                       myV = slice(v[myDp]);
    scenario::Input<float, 3> qM(myQ, {LocalSeq, Heads, Dim});
    scenario::Input<float, 3> kM(myK, {LocalSeq, Heads, Dim});
    scenario::Input<float, 3> vM(myV, {LocalSeq, Heads, Dim});
    scenario::Input<float, 3> woM(wo, {Heads, Dim, Emb});
    Result r;
    check.valuesComputed(scenario::call("ulysses", [&] {
      _mlir_ciface_ulysses(&r, qM.get(), kM.get(), vM.get(), woM.get());
    }));

    check.that("coordinate is (rank / 4, rank % 4)",
               r.dp == myDp && r.sp == mySp);
    check.that("data_parallel size (?) resolved to processes / 4",
               r.dpSize == dpSize);
    check.close("attention output of this device's tokens", r.o.toVector(), myO,
                Atol, Rtol);
    std::string oErr = check.lastError();
    check.close("gradient of Wo (sum over sp, avg over dp)", r.grad.toVector(),
                grad, Atol, Rtol);
    std::string gErr = check.lastError();
    float gotLoss = r.loss.toVector()[0];
    check.close("loss", std::vector<float>{gotLoss}, std::vector<double>{loss},
                Atol, Rtol);

    char line[400];
    std::snprintf(line, sizeof line,
                  "rank %lld (data_parallel=%lld of %lld, "
                  "sequence_parallel=%lld): tokens [%lld, %lld) of replica "
                  "%lld; attention output vs unsharded: %s; grad Wo: %s; loss "
                  "%.6f (reference %.6f)\n",
                  (long long)rank, (long long)r.dp, (long long)r.dpSize,
                  (long long)r.sp, (long long)(mySp * LocalSeq),
                  (long long)((mySp + 1) * LocalSeq), (long long)myDp,
                  oErr.c_str(), gErr.c_str(), double(gotLoss), loss);
    check.out << line;
    if (rank == 0)
      check.out << "  tolerance |got - want| <= " << Atol << " + " << Rtol
                << " |want|\n";

    r.o.release();
    r.grad.release();
    r.loss.release();
    status = scenario::finish(world, check, "scenario 4 (DeepSpeed-Ulysses)");
  }
  mesh_module_fini();
  return status;
}
