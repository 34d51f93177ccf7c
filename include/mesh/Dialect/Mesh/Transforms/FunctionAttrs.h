//===- FunctionAttrs.h - edit all argument/result attributes ----*- C++ -*-===//
//
// Setting one argument attribute at a time rebuilds the function's whole
// attribute array: quadratic on functions with thousands of arguments. These
// helpers edit every argument's (or result's) attributes and set them once.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_FUNCTIONATTRS_H
#define MESH_DIALECT_MESH_TRANSFORMS_FUNCTIONATTRS_H

#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir {
namespace mesh {

/// Calls `edit(i, attrs)` for each argument and sets all of them once.
inline void editArgAttrs(FunctionOpInterface fn,
                         function_ref<void(unsigned, NamedAttrList &)> edit) {
  SmallVector<DictionaryAttr> all;
  all.reserve(fn.getNumArguments());
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    NamedAttrList attrs(fn.getArgAttrDict(i));
    edit(i, attrs);
    all.push_back(attrs.getDictionary(fn.getContext()));
  }
  fn.setAllArgAttrs(all);
}

/// Calls `edit(i, attrs)` for each result and sets all of them once.
inline void
editResultAttrs(FunctionOpInterface fn,
                function_ref<void(unsigned, NamedAttrList &)> edit) {
  SmallVector<DictionaryAttr> all;
  all.reserve(fn.getNumResults());
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
    NamedAttrList attrs(fn.getResultAttrDict(i));
    edit(i, attrs);
    all.push_back(attrs.getDictionary(fn.getContext()));
  }
  fn.setAllResultAttrs(all);
}

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_FUNCTIONATTRS_H
