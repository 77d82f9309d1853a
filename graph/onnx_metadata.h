// metadata_props on an ONNX value (ValueInfoProto field 4, ONNX 1.16+). The
// onnx library this project builds against (Debian's 1.12) predates the
// field, so protobuf keeps it among a message's unknown fields; these read
// and write it there. The dynamo exporter records what each initializer was
// in PyTorch here (graph-signature kind, what a folded constant came from):
// autodiff/trainable_set.cc reads it to choose what trains.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace google::protobuf {
class Message;
}

namespace ort_train {

using MetadataProps = std::vector<std::pair<std::string, std::string>>;

// The (key, value) entries of the repeated StringStringEntryProto field
// `field` of `msg`, in file order, read from its unknown fields; empty when absent.
MetadataProps read_metadata_props(const google::protobuf::Message& msg, int field);

// Appends `props` to `msg` as unknown-field entries of `field`, so a saved
// model keeps what it was loaded with.
void write_metadata_props(const MetadataProps& props, int field, google::protobuf::Message* msg);

// The value of `key` in `props`, or "" when absent.
const std::string& metadata_value(const MetadataProps& props, const std::string& key);

}  // namespace ort_train
