//===- StoreControl.h - The control plane over the TCP store ----*- C++ -*-===//
//
// The ControlGroup of a job started without MPI (torchrun, Kubernetes, srun
// without PMI): each call is a few keys in the store of Store.h. A call
// numbered k of a group with prefix P writes "P/k/<rank>" (or, for a
// broadcast, "P/k/b" from the root) and waits on the server for the keys it
// needs; a rank that completed call k knows every rank finished the calls
// before k, so it then removes its own keys of those: the store holds a
// group's last call only.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_STORECONTROL_H
#define MESHRT_LIB_STORECONTROL_H

#include "ControlPlane.h"
#include "Store.h"

namespace meshrt {
namespace detail {

/// The world control group of world rank `Rank` of `Size` under key prefix
/// `Prefix` (unique per context and run), on `Client`. `Timeout` bounds
/// every wait for a peer (0: none); a peer that does not come is an error
/// naming the call, the missing ranks and the store.
std::unique_ptr<ControlGroup>
makeStoreControl(std::shared_ptr<StoreClient> Client, std::string Prefix,
                 int64_t Rank, int64_t Size, double Timeout);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_STORECONTROL_H
