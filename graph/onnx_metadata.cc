#include "graph/onnx_metadata.h"

#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

namespace ort_train {

MetadataProps read_metadata_props(const google::protobuf::Message& msg, int field) {
  MetadataProps props;
  const google::protobuf::UnknownFieldSet& unknown = msg.GetReflection()->GetUnknownFields(msg);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& f = unknown.field(i);
    if (f.number() != field || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited())) props.emplace_back(entry.key(), entry.value());
  }
  return props;
}

void write_metadata_props(const MetadataProps& props, int field, google::protobuf::Message* msg) {
  google::protobuf::UnknownFieldSet* unknown = msg->GetReflection()->MutableUnknownFields(msg);
  for (const auto& [key, value] : props) {
    onnx::StringStringEntryProto entry;
    entry.set_key(key);
    entry.set_value(value);
    unknown->AddLengthDelimited(field, entry.SerializeAsString());
  }
}

const std::string& metadata_value(const MetadataProps& props, const std::string& key) {
  static const std::string kNone;
  for (const auto& [k, v] : props)
    if (k == key) return v;
  return kNone;
}

}  // namespace ort_train
