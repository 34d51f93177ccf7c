//===- main.cpp - scenario 2: one HSDP step against one process -----------===//
//
// Host driver of hsdp.mlir. Every rank builds the same ToyModel parameters
// and global batch (32 samples; rank r trains on samples [4r, 4r + 4), which
// is how a DistributedSampler over the flattened ("replicate", "shard") mesh
// splits it), takes its parameter shard from the compiled @shard_parameters,
// runs one compiled @hsdp_step, and compares the gathered updated parameters
// and the loss with one SGD step on the whole batch computed here in double
// precision on one process.
//
// Tolerance: |got - want| <= 1e-6 + 1e-5 |want| (float32 against float64,
// sums of at most 32 terms of magnitude < 10).
//
//   mpirun -n 8 mesh-scenario-hsdp
//
//===----------------------------------------------------------------------===//

#include "../common/Scenario.h"

using scenario::MemRef;

namespace {
constexpr int64_t In = 10, Hid = 10, Out = 5;
constexpr int64_t NumParams = 165, Padded = 168, Shards = 4;
constexpr int64_t GlobalBatch = 32, LocalBatch = 4;
constexpr float LearningRate = 0.1f;
constexpr double Atol = 1e-6, Rtol = 1e-5;
// Offsets in the flat parameter vector (torch's order: net1, net2).
constexpr int64_t OffW1 = 0, OffB1 = 100, OffW2 = 110, OffB2 = 160;

struct StepResult {
  MemRef<float, 1> newShard; // 42
  MemRef<float, 1> newFull;  // 168
  MemRef<float, 1> loss;     // 1
};

/// One SGD step of the ToyModel on `n` samples, MSE loss; returns the new
/// parameters and sets `loss`.
std::vector<double> referenceStep(const std::vector<float> &p,
                                  const std::vector<float> &x,
                                  const std::vector<float> &t, int64_t n,
                                  double lr, double &loss) {
  auto W1 = [&](int64_t o, int64_t k) { return double(p[OffW1 + o * In + k]); };
  auto W2 = [&](int64_t o, int64_t k) {
    return double(p[OffW2 + o * Hid + k]);
  };
  std::vector<double> grad(Padded, 0.0);
  loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    double h[Hid], a[Hid], y[Out], dy[Out], dh[Hid];
    for (int64_t o = 0; o < Hid; ++o) {
      h[o] = p[OffB1 + o];
      for (int64_t k = 0; k < In; ++k)
        h[o] += double(x[i * In + k]) * W1(o, k);
      a[o] = h[o] > 0 ? h[o] : 0;
    }
    for (int64_t o = 0; o < Out; ++o) {
      y[o] = p[OffB2 + o];
      for (int64_t k = 0; k < Hid; ++k)
        y[o] += a[k] * W2(o, k);
      double d = y[o] - t[i * Out + o];
      loss += d * d / double(n * Out);
      dy[o] = 2 * d / double(n * Out);
    }
    for (int64_t o = 0; o < Out; ++o) {
      grad[OffB2 + o] += dy[o];
      for (int64_t k = 0; k < Hid; ++k)
        grad[OffW2 + o * Hid + k] += dy[o] * a[k];
    }
    for (int64_t k = 0; k < Hid; ++k) {
      double da = 0;
      for (int64_t o = 0; o < Out; ++o)
        da += dy[o] * W2(o, k);
      dh[k] = h[k] > 0 ? da : 0;
    }
    for (int64_t o = 0; o < Hid; ++o) {
      grad[OffB1 + o] += dh[o];
      for (int64_t k = 0; k < In; ++k)
        grad[OffW1 + o * In + k] += dh[o] * x[i * In + k];
    }
  }
  std::vector<double> updated(Padded);
  for (int64_t j = 0; j < Padded; ++j)
    updated[j] = double(p[j]) - lr * grad[j];
  return updated;
}
} // namespace

extern "C" {
void _mlir_ciface_shard_parameters(MemRef<float, 1> *shard,
                                   MemRef<float, 1> *full);
void _mlir_ciface_hsdp_step(StepResult *, MemRef<float, 1> *pShard,
                            MemRef<float, 2> *x, MemRef<float, 2> *target,
                            float lr);
}

int main() {
  mesh_module_init();
  int status = 0;
  {
    scenario::World world;
    scenario::Checks check;
    const int64_t rank = world.rank();
    check.that("8 processes (mpirun -n 8)", world.size() == 8);

    // nn.Linear's default init range, 1/sqrt(fan_in); padding is zero.
    scenario::Lcg rng(2);
    std::vector<float> params(Padded, 0.0f);
    double bound = 1.0 / std::sqrt(10.0);
    for (int64_t j = 0; j < NumParams; ++j)
      params[j] = float(rng.uniform(-bound, bound));
    std::vector<float> x = rng.floats(GlobalBatch * In, -1, 1);
    std::vector<float> t = rng.floats(GlobalBatch * Out, -1, 1);

    double wantLoss = 0;
    std::vector<double> want =
        referenceStep(params, x, t, GlobalBatch, LearningRate, wantLoss);

    // This rank's samples and parameter shard.
    std::vector<float> myX(x.begin() + rank * LocalBatch * In,
                           x.begin() + (rank + 1) * LocalBatch * In);
    std::vector<float> myT(t.begin() + rank * LocalBatch * Out,
                           t.begin() + (rank + 1) * LocalBatch * Out);
    scenario::Input<float, 1> fullM(params, {Padded});
    MemRef<float, 1> shard;
    bool shardComputed = scenario::call("shard_parameters", [&] {
      _mlir_ciface_shard_parameters(&shard, fullM.get());
    });
    check.valuesComputed(shardComputed);
    int64_t shardIndex = rank % Shards;
    std::vector<float> wantShard(params.begin() + shardIndex * 42,
                                 params.begin() + (shardIndex + 1) * 42);
    check.exact("initial shard (all_slice over shard)", shard.toVector(),
                wantShard);

    scenario::Input<float, 2> xM(myX, {LocalBatch, In});
    scenario::Input<float, 2> tM(myT, {LocalBatch, Out});
    StepResult r;
    bool stepComputed = scenario::call("hsdp_step", [&] {
      _mlir_ciface_hsdp_step(&r, &shard, xM.get(), tM.get(), LearningRate);
    });
    check.valuesComputed(shardComputed && stepComputed);

    std::vector<float> got = r.newFull.toVector();
    check.close("updated parameters (gathered)", got, want, Atol, Rtol);
    std::string paramErr = check.lastError();
    std::vector<double> wantMine(want.begin() + shardIndex * 42,
                                 want.begin() + (shardIndex + 1) * 42);
    check.close("updated shard", r.newShard.toVector(), wantMine, Atol, Rtol);
    float loss = r.loss.toVector()[0];
    check.close("loss on the global batch", std::vector<float>{loss},
                std::vector<double>{wantLoss}, Atol, Rtol);
    double moved = 0;
    for (int64_t j = 0; j < Padded; ++j)
      moved = std::max(moved, std::fabs(double(got[j]) - params[j]));
    check.thatValues("the step changed the parameters", moved > 1e-3);
    check.exact("padding stays zero",
                std::vector<float>(got.begin() + NumParams, got.end()),
                std::vector<float>(Padded - NumParams, 0.0f));

    char line[320];
    std::snprintf(
        line, sizeof line,
        "rank %lld (replicate=%lld, shard=%lld): samples [%lld, "
        "%lld), params [%lld, %lld); loss %.6f (reference %.6f); "
        "165 updated params vs one process: %s; max |step| %.4f\n",
        (long long)rank, (long long)(rank / Shards), (long long)shardIndex,
        (long long)(rank * LocalBatch), (long long)((rank + 1) * LocalBatch),
        (long long)(shardIndex * 42), (long long)((shardIndex + 1) * 42),
        double(loss), wantLoss, paramErr.c_str(), moved);
    check.out << line;
    if (rank == 0)
      check.out << "  tolerance |got - want| <= " << Atol << " + " << Rtol
                << " |want|, lr " << LearningRate << "\n";

    shard.release();
    r.newShard.release();
    r.newFull.release();
    r.loss.release();
    status = scenario::finish(world, check, "scenario 2 (HSDP training step)");
  }
  mesh_module_fini();
  return status;
}
