//===- BruteForce.h - Independent rank math for the tests -------*- C++ -*-===//
//
// The tests' own answer to "which ranks are in my group, and in what order",
// computed without the runtime's formulas: coordinates come from an odometer
// that counts through the mesh row-major, groups from comparing every rank's
// coordinates, and the order from sorting members by their coordinates over
// the axes in the order written.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_TEST_BRUTEFORCE_H
#define MESHRT_TEST_BRUTEFORCE_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace meshrt {
namespace test {

/// A mesh whose every question is answered by enumeration.
class BruteMesh {
public:
  explicit BruteMesh(std::vector<int64_t> Shape) : Shape(std::move(Shape)) {
    std::vector<int64_t> C(this->Shape.size(), 0);
    bool Done = false;
    while (!Done) {
      Coords.push_back(C);
      // Odometer: bump the last axis, carry into earlier ones.
      Done = true;
      for (size_t K = C.size(); K-- > 0;) {
        if (++C[K] < this->Shape[K]) {
          Done = false;
          break;
        }
        C[K] = 0;
      }
    }
  }

  /// Number of ranks.
  int64_t numRanks() const { return int64_t(Coords.size()); }
  /// Coordinates of rank `R`.
  const std::vector<int64_t> &coords(int64_t R) const {
    return Coords[size_t(R)];
  }

  /// Members of `R`'s group along `Axes`, in group order.
  std::vector<int64_t> members(int64_t R,
                               const std::vector<int64_t> &Axes) const {
    std::vector<int64_t> M;
    for (int64_t Q = 0; Q < numRanks(); ++Q) {
      bool Same = true;
      for (size_t K = 0; K < Shape.size(); ++K)
        if (std::find(Axes.begin(), Axes.end(), int64_t(K)) == Axes.end() &&
            coords(Q)[K] != coords(R)[K])
          Same = false;
      if (Same)
        M.push_back(Q);
    }
    auto Key = [&](int64_t Q) {
      std::vector<int64_t> V;
      for (int64_t A : Axes)
        V.push_back(coords(Q)[size_t(A)]);
      return V;
    };
    std::sort(M.begin(), M.end(),
              [&](int64_t A, int64_t B) { return Key(A) < Key(B); });
    return M;
  }

  /// `R`'s rank inside its group along `Axes`.
  int64_t rankInGroup(int64_t R, const std::vector<int64_t> &Axes) const {
    std::vector<int64_t> M = members(R, Axes);
    return int64_t(std::find(M.begin(), M.end(), R) - M.begin());
  }

private:
  std::vector<int64_t> Shape;
  std::vector<std::vector<int64_t>> Coords;
};

/// Every ordered list of distinct axes of an `N`-axis mesh, the empty list
/// included (sum over k of N!/(N-k)! lists).
inline std::vector<std::vector<int64_t>> orderedAxisLists(int64_t N) {
  std::vector<std::vector<int64_t>> Out;
  std::vector<int64_t> Cur;
  std::vector<bool> Used(size_t(N), false);
  auto Rec = [&](auto &&Self) -> void {
    Out.push_back(Cur);
    for (int64_t A = 0; A < N; ++A) {
      if (Used[size_t(A)])
        continue;
      Used[size_t(A)] = true;
      Cur.push_back(A);
      Self(Self);
      Cur.pop_back();
      Used[size_t(A)] = false;
    }
  };
  Rec(Rec);
  return Out;
}

} // namespace test
} // namespace meshrt

#endif // MESHRT_TEST_BRUTEFORCE_H
