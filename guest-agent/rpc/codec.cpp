#include "rpc/codec.hpp"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>

namespace cove::rpc {
namespace {
std::string lower_media_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view base = ct.substr(0, semi);
  while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
  while (!base.empty() && base.front() == ' ') base.remove_prefix(1);
  std::string out(base);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::optional<Codec> codec_for_content_type(std::string_view content_type, bool streaming) {
  const std::string mt = lower_media_type(content_type);
  if (streaming) {
    if (mt == "application/connect+json") return Codec::json;
    if (mt == "application/connect+proto") return Codec::proto;
  } else {
    if (mt == "application/json") return Codec::json;
    if (mt == "application/proto") return Codec::proto;
  }
  return std::nullopt;
}

std::string content_type_for(Codec codec, bool streaming) {
  if (streaming) return codec == Codec::json ? "application/connect+json" : "application/connect+proto";
  return codec == Codec::json ? "application/json" : "application/proto";
}

bool decode_message(Codec codec, std::string_view bytes, google::protobuf::Message& out,
                    std::string* error) {
  if (codec == Codec::proto) {
    if (!out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      if (error) *error = "invalid protobuf message";
      return false;
    }
    return true;
  }
  // An empty unary JSON body is an empty message, as connect-go treats it.
  if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    out.Clear();
    return true;
  }
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(bytes.data(), bytes.size()), &out, opts);
  if (!status.ok()) {
    if (error) *error = std::string(status.message());
    return false;
  }
  return true;
}

std::string encode_message(Codec codec, const google::protobuf::Message& msg) {
  std::string out;
  if (codec == Codec::proto) {
    msg.SerializeToString(&out);
    return out;
  }
  google::protobuf::util::JsonPrintOptions opts;  // camelCase names, defaults omitted
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  return out;
}

}  // namespace cove::rpc
