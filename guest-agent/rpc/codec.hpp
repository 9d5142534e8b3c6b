#pragma once
// The two Connect codecs: proto3 canonical JSON (what the SDKs use) and binary protobuf
// (what E2B's orchestrator and Go clients use).
#include <google/protobuf/message.h>

#include <optional>
#include <string>
#include <string_view>

namespace cove::rpc {

enum class Codec { json, proto };

// Maps a Content-Type to a codec. `streaming` selects the application/connect+* family.
std::optional<Codec> codec_for_content_type(std::string_view content_type, bool streaming);
std::string content_type_for(Codec codec, bool streaming);

// Unknown fields are ignored; camelCase and snake_case names accepted; enums by name or number.
bool decode_message(Codec codec, std::string_view bytes, google::protobuf::Message& out,
                    std::string* error);
std::string encode_message(Codec codec, const google::protobuf::Message& msg);

}  // namespace cove::rpc
