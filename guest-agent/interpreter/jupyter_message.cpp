#include "interpreter/jupyter_message.hpp"

#include "text/uuid.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace cove::interpreter {
namespace {

std::string to_hex(const unsigned char* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

std::string dump(const nlohmann::json& j) {
  // Replace rather than throw on invalid UTF-8 (it can only come from user code).
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_part(const std::string& text, const char* what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw JupyterMessageError(std::string("invalid JSON in the message ") + what);
  if (!j.is_object()) throw JupyterMessageError(std::string("the message ") + what + " is not a JSON object");
  return j;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string JupyterMessage::msg_type() const {
  auto it = header.find("msg_type");
  return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string JupyterMessage::parent_msg_id() const {
  auto it = parent_header.find("msg_id");
  return it != parent_header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string MessageSigner::sign(std::string_view header, std::string_view parent_header,
                                std::string_view metadata, std::string_view content) const {
  if (key_.empty()) return {};
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  bool ok = false;
  if (EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr)) {
    if (EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac)) {
      char digest_name[] = "SHA256";
      OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0), OSSL_PARAM_construct_end()};
      size_t out_size = 0;
      ok = EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key_.data()), key_.size(), params) == 1;
      for (std::string_view part : {header, parent_header, metadata, content}) {
        ok = ok && EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(part.data()), part.size()) == 1;
      }
      ok = ok && EVP_MAC_final(ctx, digest, &out_size, sizeof digest) == 1;
      digest_size = static_cast<unsigned int>(out_size);
      EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
  }
  if (!ok) throw JupyterMessageError("HMAC-SHA256 is unavailable in OpenSSL");
  return to_hex(digest, digest_size);
}

bool MessageSigner::verify(std::string_view signature, std::string_view header, std::string_view parent_header,
                           std::string_view metadata, std::string_view content) const {
  if (key_.empty()) return true;  // unsigned sessions accept anything, as Jupyter does
  std::string expected = sign(header, parent_header, metadata, content);
  return signature.size() == expected.size() &&
         CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) == 0;
}

std::vector<std::string> MessageSigner::encode(const JupyterMessage& message) const {
  std::vector<std::string> frames = message.identities;
  frames.reserve(frames.size() + 6 + message.buffers.size());
  std::string header = dump(message.header);
  std::string parent = dump(message.parent_header);
  std::string metadata = dump(message.metadata);
  std::string content = dump(message.content);
  frames.emplace_back(kJupyterDelimiter);
  frames.push_back(sign(header, parent, metadata, content));
  frames.push_back(std::move(header));
  frames.push_back(std::move(parent));
  frames.push_back(std::move(metadata));
  frames.push_back(std::move(content));
  frames.insert(frames.end(), message.buffers.begin(), message.buffers.end());
  return frames;
}

JupyterMessage MessageSigner::decode(const std::vector<std::string>& frames) const {
  auto delimiter = std::find(frames.begin(), frames.end(), kJupyterDelimiter);
  if (delimiter == frames.end()) throw JupyterMessageError("no <IDS|MSG> delimiter in the message");
  size_t at = static_cast<size_t>(delimiter - frames.begin());
  if (frames.size() - at < 6) {
    throw JupyterMessageError("truncated message: " + std::to_string(frames.size() - at - 1) +
                              " frames after the delimiter, need 5");
  }
  const std::string& signature = frames[at + 1];
  const std::string& header = frames[at + 2];
  const std::string& parent = frames[at + 3];
  const std::string& metadata = frames[at + 4];
  const std::string& content = frames[at + 5];
  if (!verify(signature, header, parent, metadata, content)) {
    throw JupyterMessageError("invalid message signature");
  }
  JupyterMessage m;
  m.identities.assign(frames.begin(), delimiter);
  m.header = parse_part(header, "header");
  m.parent_header = parse_part(parent, "parent_header");
  m.metadata = parse_part(metadata, "metadata");
  m.content = parse_part(content, "content");
  m.buffers.assign(frames.begin() + static_cast<std::ptrdiff_t>(at + 6), frames.end());
  return m;
}

std::string jupyter_now() {
  auto now = std::chrono::system_clock::now();
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  long frac = static_cast<long>(micros % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

std::string to_python_isoformat(std::string_view date) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); a space instead of T is accepted too.
  if (date.size() < 19) return {};
  std::string_view base = date.substr(0, 19);
  for (size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u, 11u, 12u, 14u, 15u, 17u, 18u}) {
    if (!std::isdigit(static_cast<unsigned char>(base[i]))) return {};
  }
  if (base[4] != '-' || base[7] != '-' || (base[10] != 'T' && base[10] != ' ') || base[13] != ':' ||
      base[16] != ':') {
    return {};
  }
  std::string_view rest = date.substr(19);
  std::string fraction;
  if (!rest.empty() && rest.front() == '.') {
    size_t n = 1;
    while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
    std::string_view digits = rest.substr(1, n - 1);
    if (!all_digits(digits)) return {};
    fraction = std::string(digits.substr(0, 6));
    fraction.resize(6, '0');
    rest = rest.substr(n);
  }
  std::string offset;
  if (rest == "Z" || rest == "z" || rest.empty()) {
    offset = "+00:00";  // Jupyter dates are UTC; a naive one is taken as UTC too
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
             all_digits(rest.substr(1, 2)) && all_digits(rest.substr(4, 2))) {
    offset = std::string(rest);
  } else {
    return {};
  }
  std::string out(base);
  out[10] = 'T';
  if (!fraction.empty() && fraction != "000000") out += "." + fraction;
  return out + offset;
}

nlohmann::json make_header(const std::string& msg_type, const std::string& session,
                           const std::string& username) {
  return {{"msg_id", text::random_uuid4()}, {"session", session},   {"username", username},
          {"date", jupyter_now()}, {"msg_type", msg_type}, {"version", "5.3"}};
}

}  // namespace cove::interpreter
