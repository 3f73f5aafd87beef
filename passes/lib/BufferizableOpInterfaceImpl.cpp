//===- BufferizableOpInterfaceImpl.cpp - fmha ops on tensors --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Transforms/BufferizableOpInterfaceImpl.h"

#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

/// A destination-style fmha op: ins are read; outs are written, and read
/// only when `ReadsOuts` (fmha.accumulate's acc += x). `Elementwise` ops
/// (fmha.merge, fmha.accumulate) read each element of an in before they
/// write the same element of the out of its shape, so an out may take the
/// buffer of such an in (the in-place merge and accumulate of Runtime.h).
template <typename OpTy, bool ReadsOuts, bool Elementwise>
struct FmhaDpsModel : public DstBufferizableOpInterfaceExternalModel<
                          FmhaDpsModel<OpTy, ReadsOuts, Elementwise>, OpTy> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return ReadsOuts ||
           !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }

  bool bufferizesToElementwiseAccess(Operation *, const AnalysisState &,
                                     ArrayRef<OpOperand *> operands) const {
    if (!Elementwise)
      return false;
    // Elementwise among operands of one shape (o1, o2, o; lse1, lse2, lse).
    for (OpOperand *operand : operands)
      if (operand->get().getType() != operands.front()->get().getType())
        return false;
    return true;
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto dps = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> buffers;
    SmallVector<Value> results;
    for (OpOperand &operand : op->getOpOperands()) {
      Value value = operand.get();
      if (!isa<TensorType>(value.getType())) {
        buffers.push_back(value);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, value, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
      if (dps.isDpsInit(&operand))
        results.push_back(*buffer);
    }
    // The same op on the buffers: no results, the outs written in place.
    rewriter.setInsertionPoint(op);
    OperationState memrefOp(op->getLoc(), op->getName(), buffers,
                            /*types=*/TypeRange{}, op->getAttrs());
    rewriter.create(memrefOp);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

/// fmha.atomic_add of a value: the same op on its buffer (read, not
/// written; the dest is a buffer already).
struct AtomicAddModel
    : public BufferizableOpInterface::ExternalModel<AtomicAddModel,
                                                    mlir::fmha::AtomicAddOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto add = cast<mlir::fmha::AtomicAddOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, add.getValue(), options, state);
    if (failed(buffer))
      return failure();
    rewriter.setInsertionPoint(op);
    mlir::fmha::AtomicAddOp::create(rewriter, op->getLoc(), *buffer,
                                    add.getDest());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fmha::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FmhaDialect *) {
    AttentionOp::attachInterface<FmhaDpsModel<AttentionOp, false, false>>(*ctx);
    AttentionBwdOp::attachInterface<FmhaDpsModel<AttentionBwdOp, false, false>>(
        *ctx);
    SinksGradOp::attachInterface<FmhaDpsModel<SinksGradOp, false, false>>(*ctx);
    MergeOp::attachInterface<FmhaDpsModel<MergeOp, false, true>>(*ctx);
    AccumulateOp::attachInterface<FmhaDpsModel<AccumulateOp, true, true>>(*ctx);
    // The forward's tile ops on values (fmha-tile-attention on tensors):
    // tile_softmax and tile_pv read their outs (s, m, l, acc; acc).
    TileInitOp::attachInterface<FmhaDpsModel<TileInitOp, false, false>>(*ctx);
    TileQKOp::attachInterface<FmhaDpsModel<TileQKOp, false, false>>(*ctx);
    TileSoftmaxOp::attachInterface<FmhaDpsModel<TileSoftmaxOp, true, false>>(
        *ctx);
    TilePVOp::attachInterface<FmhaDpsModel<TilePVOp, true, false>>(*ctx);
    TileFinalizeOp::attachInterface<FmhaDpsModel<TileFinalizeOp, false, false>>(
        *ctx);
    // The backward's: tile_matmul reads c (when it accumulates), tile_bwd_ds
    // dp.
    TileFillOp::attachInterface<FmhaDpsModel<TileFillOp, false, false>>(*ctx);
    TileStoreOp::attachInterface<FmhaDpsModel<TileStoreOp, false, false>>(*ctx);
    TileMatmulOp::attachInterface<FmhaDpsModel<TileMatmulOp, true, false>>(
        *ctx);
    TileRowDotOp::attachInterface<FmhaDpsModel<TileRowDotOp, false, false>>(
        *ctx);
    TileBwdProbsOp::attachInterface<FmhaDpsModel<TileBwdProbsOp, false, false>>(
        *ctx);
    TileBwdDsOp::attachInterface<FmhaDpsModel<TileBwdDsOp, true, false>>(*ctx);
    AtomicAddOp::attachInterface<AtomicAddModel>(*ctx);
  });
}
