//===- BufferizableOpInterfaceImpl.h - fmha ops on tensors ------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// One-Shot Bufferize models of the destination-style fmha ops
// (fmha.attention, fmha.attention_bwd, fmha.merge, fmha.accumulate): each
// becomes the same op on the buffers of its operands, writing its outs in
// place; only fmha.accumulate reads its out (acc += x). The named pipelines
// bufferize first, so they take the ops on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define FMHA_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace fmha {

/// Attaches the models to the fmha ops when the fmha dialect loads.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace fmha
} // namespace mlir

#endif // FMHA_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
