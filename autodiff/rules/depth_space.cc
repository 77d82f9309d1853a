// DepthToSpace and SpaceToDepth only move elements: each one's gradient is the
// inverse move of dY. DepthToSpace's is com.ort_train SpaceToDepth with its
// mode (no ONNX op inverts the CRD layout); SpaceToDepth's (DCR) is DepthToSpace DCR.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status depth_to_space_rule(GradientContext& c) {
  std::vector<Attribute> attrs = {Attribute::make_int("blocksize", c.node().attr_int("blocksize", 0)),
                                  Attribute::make_string("mode", c.node().attr_string("mode", "DCR"))};
  ASSIGN_OR_RETURN(auto g, c.add1("SpaceToDepth", {c.GO(0)}, attrs, kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

Status space_to_depth_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add1("DepthToSpace", {c.GO(0)},
                                  {Attribute::make_int("blocksize", c.node().attr_int("blocksize", 0))}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("DepthToSpace").rule(depth_to_space_rule);
ORT_GRADIENT("SpaceToDepth").rule(space_to_depth_rule);

}  // namespace ort_train
