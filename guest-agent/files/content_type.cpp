#include "files/content_type.hpp"

#include <array>
#include <cctype>
#include <utility>

namespace cove::files {
namespace {

constexpr std::string_view kUtf8 = "; charset=utf-8";

// Sorted by extension for readability only; looked up linearly (short table).
constexpr std::array<std::pair<std::string_view, std::string_view>, 45> kTypes{{
    {".avif", "image/avif"},
    {".bmp", "image/bmp"},
    {".c", "text/x-csrc; charset=utf-8"},
    {".cpp", "text/x-c++src; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".csv", "text/csv; charset=utf-8"},
    {".gif", "image/gif"},
    {".gz", "application/gzip"},
    {".h", "text/x-chdr; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".html", "text/html; charset=utf-8"},
    {".ico", "image/vnd.microsoft.icon"},
    {".java", "text/x-java; charset=utf-8"},
    {".jpeg", "image/jpeg"},
    {".jpg", "image/jpeg"},
    {".js", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".markdown", "text/markdown; charset=utf-8"},
    {".md", "text/markdown; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".mp3", "audio/mpeg"},
    {".mp4", "video/mp4"},
    {".oga", "audio/ogg"},
    {".ogg", "audio/ogg"},
    {".pdf", "application/pdf"},
    {".png", "image/png"},
    {".py", "text/x-python; charset=utf-8"},
    {".sh", "text/x-sh; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".tar", "application/x-tar"},
    {".text", "text/plain; charset=utf-8"},
    {".tif", "image/tiff"},
    {".tiff", "image/tiff"},
    {".txt", "text/plain; charset=utf-8"},
    {".wasm", "application/wasm"},
    {".wav", "audio/x-wav"},
    {".webm", "video/webm"},
    {".webp", "image/webp"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".xml", "text/xml; charset=utf-8"},
    {".zip", "application/zip"},
    {".opus", "audio/ogg"},
    {".m4v", "video/mp4"},
    {".srt", "text/plain; charset=utf-8"},
}};

bool is_ws(unsigned char c) { return c == '\t' || c == '\n' || c == '\x0c' || c == '\r' || c == ' '; }

// Go's isBinary set: control bytes other than TAB, LF, FF, CR and ESC.
bool is_binary_byte(unsigned char c) {
  return c <= 0x08 || c == 0x0b || (c >= 0x0e && c <= 0x1a) || (c >= 0x1c && c <= 0x1f);
}

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// An HTML tag signature: after leading whitespace, `tag` case-insensitively, then a space or '>'.
bool html_sig(std::string_view data, std::string_view tag) {
  size_t i = 0;
  while (i < data.size() && is_ws(static_cast<unsigned char>(data[i]))) ++i;
  if (data.size() - i < tag.size() + 1) return false;
  for (size_t k = 0; k < tag.size(); ++k) {
    char a = data[i + k], b = tag[k];
    if (b >= 'A' && b <= 'Z') a = static_cast<char>(std::toupper(static_cast<unsigned char>(a)));
    if (a != b) return false;
  }
  char term = data[i + tag.size()];
  return term == ' ' || term == '>';
}

}  // namespace

std::string content_type_by_extension(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto dot = base.rfind('.');
  if (dot == std::string_view::npos) return {};
  std::string ext(base.substr(dot));
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [e, type] : kTypes) {
    if (e == ext) return std::string(type);
  }
  return {};
}

std::string sniff_content_type(std::string_view data) {
  if (data.size() > kSniffLength) data = data.substr(0, kSniffLength);
  static constexpr std::string_view kHtmlTags[] = {"<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1",
                                                   "<DIV", "<FONT", "<TABLE", "<A", "<STYLE", "<TITLE", "<B",
                                                   "<BODY", "<BR", "<P", "<!--"};
  for (auto tag : kHtmlTags) {
    if (html_sig(data, tag)) return "text/html; charset=utf-8";
  }
  {
    size_t i = 0;
    while (i < data.size() && is_ws(static_cast<unsigned char>(data[i]))) ++i;
    if (has_prefix(data.substr(i), "<?xml")) return "text/xml; charset=utf-8";
  }
  if (has_prefix(data, "%PDF-")) return "application/pdf";
  if (has_prefix(data, "%!PS-Adobe-")) return "application/postscript";
  if (has_prefix(data, "\xFE\xFF")) return "text/plain; charset=utf-16be";
  if (has_prefix(data, "\xFF\xFE")) return "text/plain; charset=utf-16le";
  if (has_prefix(data, "\xEF\xBB\xBF")) return "text/plain; charset=utf-8";
  if (has_prefix(data, std::string_view("\x00\x00\x01\x00", 4)) || has_prefix(data, std::string_view("\x00\x00\x02\x00", 4))) {
    return "image/x-icon";
  }
  if (has_prefix(data, "BM")) return "image/bmp";
  if (has_prefix(data, "GIF87a") || has_prefix(data, "GIF89a")) return "image/gif";
  if (data.size() >= 14 && has_prefix(data, "RIFF") && data.substr(8, 6) == "WEBPVP") return "image/webp";
  if (has_prefix(data, "\x89PNG\x0D\x0A\x1A\x0A")) return "image/png";
  if (has_prefix(data, "\xFF\xD8\xFF")) return "image/jpeg";
  if (data.size() >= 12 && has_prefix(data, "RIFF") && data.substr(8, 4) == "WAVE") return "audio/wave";
  if (has_prefix(data, "ID3")) return "audio/mpeg";
  if (has_prefix(data, std::string_view("OggS\x00", 5))) return "application/ogg";
  if (has_prefix(data, "\x1A\x45\xDF\xA3")) return "video/webm";
  if (has_prefix(data, std::string_view("\x00\x61\x73\x6D", 4))) return "application/wasm";
  if (has_prefix(data, "\x1F\x8B\x08")) return "application/x-gzip";
  if (has_prefix(data, "PK\x03\x04")) return "application/zip";
  if (has_prefix(data, std::string_view("Rar!\x1A\x07\x00", 7)) || has_prefix(data, std::string_view("Rar!\x1A\x07\x01\x00", 8))) {
    return "application/x-rar-compressed";
  }
  for (unsigned char c : data) {
    if (is_binary_byte(c)) return "application/octet-stream";
  }
  return std::string("text/plain") + std::string(kUtf8);
}

}  // namespace cove::files
