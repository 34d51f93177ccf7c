//===- main.cpp - scenario 5: tensor-parallel MLP against the full one ----===//
//
// Host driver of tp_mlp.mlir. Every rank builds the same full parameters and
// batch (small integers, so every sum is exact in f32 whatever its order),
// lets the compiled @shard_parameters cut out its pieces, runs the
// tensor-parallel @tp_mlp, and compares its 4 output rows with the unsharded
// MLP computed here on one process: they must be equal exactly.
//
//   mpirun -n 8 mesh-scenario-tp-mlp
//
//===----------------------------------------------------------------------===//

#include "../common/Scenario.h"

using scenario::MemRef;

namespace {
constexpr int64_t Tokens = 8, Hidden = 8, Ffn = 32, DP = 2, TP = 4;
constexpr int64_t LocalTokens = Tokens / DP, LocalFfn = Ffn / TP;

struct Shards {
  MemRef<float, 2> x;  // 4x8
  MemRef<float, 2> w1; // 8x8
  MemRef<float, 1> b1; // 8
  MemRef<float, 2> w2; // 8x8
  int64_t dp, tp;
};

std::vector<float> integers(scenario::Lcg &rng, size_t n, int64_t lo,
                            int64_t hi) {
  std::vector<float> v(n);
  for (float &x : v)
    x = float(rng.integer(lo, hi));
  return v;
}
} // namespace

extern "C" {
void _mlir_ciface_shard_parameters(Shards *, MemRef<float, 2> *x,
                                   MemRef<float, 2> *w1, MemRef<float, 1> *b1,
                                   MemRef<float, 2> *w2);
void _mlir_ciface_tp_mlp(MemRef<float, 2> *y, MemRef<float, 2> *x,
                         MemRef<float, 2> *w1, MemRef<float, 1> *b1,
                         MemRef<float, 2> *w2, MemRef<float, 1> *b2);
}

int main() {
  mesh_module_init();
  int status = 0;
  {
    scenario::World world;
    scenario::Checks check;

    scenario::Lcg rng(5);
    std::vector<float> x = integers(rng, Tokens * Hidden, -2, 2);
    std::vector<float> w1 = integers(rng, Hidden * Ffn, -2, 2);
    std::vector<float> b1 = integers(rng, Ffn, -3, 3);
    std::vector<float> w2 = integers(rng, Ffn * Hidden, -2, 2);
    std::vector<float> b2 = integers(rng, Hidden, -3, 3);

    // The unsharded MLP, in double (exact here).
    std::vector<double> y(Tokens * Hidden);
    for (int64_t t = 0; t < Tokens; ++t) {
      std::vector<double> h(Ffn);
      for (int64_t f = 0; f < Ffn; ++f) {
        double s = b1[f];
        for (int64_t e = 0; e < Hidden; ++e)
          s += double(x[t * Hidden + e]) * w1[e * Ffn + f];
        h[f] = s > 0 ? s : 0;
      }
      for (int64_t o = 0; o < Hidden; ++o) {
        double s = b2[o];
        for (int64_t f = 0; f < Ffn; ++f)
          s += h[f] * w2[f * Hidden + o];
        y[t * Hidden + o] = s;
      }
    }

    scenario::Input<float, 2> xm(x, {Tokens, Hidden});
    scenario::Input<float, 2> w1m(w1, {Hidden, Ffn});
    scenario::Input<float, 1> b1m(b1, {Ffn});
    scenario::Input<float, 2> w2m(w2, {Ffn, Hidden});
    scenario::Input<float, 1> b2m(b2, {Hidden});
    Shards s;
    bool shardsComputed = scenario::call("shard_parameters", [&] {
      _mlir_ciface_shard_parameters(&s, xm.get(), w1m.get(), b1m.get(),
                                    w2m.get());
    });
    check.that("coordinate is (rank / 4, rank % 4)",
               s.dp == world.rank() / TP && s.tp == world.rank() % TP);

    MemRef<float, 2> out;
    bool mlpComputed = scenario::call("tp_mlp", [&] {
      _mlir_ciface_tp_mlp(&out, &s.x, &s.w1, &s.b1, &s.w2, b2m.get());
    });
    check.valuesComputed(shardsComputed && mlpComputed);
    std::vector<float> got = out.toVector();
    std::vector<double> want(y.begin() + s.dp * LocalTokens * Hidden,
                             y.begin() + (s.dp + 1) * LocalTokens * Hidden);
    std::vector<float> wantF(want.begin(), want.end());
    bool exact = check.exact("y rows of this dp replica", got, wantF);
    check.close("y rows of this dp replica", got, want, 0, 0);

    char line[320];
    std::snprintf(
        line, sizeof line,
        "rank %lld (dp=%lld, tp=%lld): W1 columns [%lld, %lld), W2 "
        "rows [%lld, %lld), one all_reduce over tp; y rows [%lld, "
        "%lld) (%lld values) %s the unsharded MLP (%s)\n",
        (long long)world.rank(), (long long)s.dp, (long long)s.tp,
        (long long)(s.tp * LocalFfn), (long long)((s.tp + 1) * LocalFfn),
        (long long)(s.tp * LocalFfn), (long long)((s.tp + 1) * LocalFfn),
        (long long)(s.dp * LocalTokens), (long long)((s.dp + 1) * LocalTokens),
        (long long)got.size(),
        !check.valuesComputed() ? "not compared with"
        : exact                 ? "equal"
                                : "DIFFER from",
        check.lastError().c_str());
    check.out << line;
    if (world.rank() == 0)
      check.out << "  e.g. y[0] = "
                << check.str(
                       std::vector<float>(got.begin(), got.begin() + Hidden))
                << "\n";

    out.release();
    s.x.release();
    s.w1.release();
    s.b1.release();
    s.w2.release();
    status = scenario::finish(world, check, "scenario 5 (tensor-parallel MLP)");
  }
  mesh_module_fini();
  return status;
}
