// Cove's compiled-in envd contracts (proto/process.proto, proto/filesystem.proto) must match the
// reference contracts exactly: package, services, methods, messages (recursively), fields, oneofs,
// proto3 optional and enums. The reference .proto files are parsed at test time with libprotoc.
//
// Reference location: $COVE_SHARED_SPEC if set, else COVE_SHARED_SPEC_DIR (<repo>/../shared/spec/envd).
#include <gtest/gtest.h>
#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "filesystem.pb.h"
#include "process.pb.h"

namespace pb = google::protobuf;

namespace {

// ---- loading ----------------------------------------------------------------------------------

std::string shared_spec_dir() {
  if (const char* env = std::getenv("COVE_SHARED_SPEC"); env && *env) return env;
  return COVE_SHARED_SPEC_DIR;
}

std::string protobuf_include_dir() {
  std::string dir = COVE_PROTOBUF_INCLUDE_DIR;
  return dir.empty() ? "/usr/include" : dir;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CollectErrors : public pb::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& filename, int line, int column, const std::string& message) override {
    text += filename + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message + "\n";
  }
  std::string text;
};

// Disk files, with optional in-memory replacements (used to feed deliberately drifted text).
class OverlaySourceTree : public pb::compiler::SourceTree {
 public:
  void MapPath(const std::string& virtual_path, const std::string& disk_path) {
    disk_.MapPath(virtual_path, disk_path);
  }
  void Override(const std::string& name, std::string content) { overrides_[name] = std::move(content); }
  pb::io::ZeroCopyInputStream* Open(const std::string& filename) override {
    if (auto it = overrides_.find(filename); it != overrides_.end()) {
      return new pb::io::ArrayInputStream(it->second.data(), static_cast<int>(it->second.size()));
    }
    return disk_.Open(filename);
  }
  std::string GetLastErrorMessage() override { return disk_.GetLastErrorMessage(); }

 private:
  pb::compiler::DiskSourceTree disk_;
  std::map<std::string, std::string> overrides_;
};

// Owns the importer (and so the descriptor pool) the parsed file lives in.
struct ParsedContract {
  OverlaySourceTree tree;
  CollectErrors errors;
  std::unique_ptr<pb::compiler::Importer> importer;
  const pb::FileDescriptor* file = nullptr;
};

// Parses `name` from `dir`, or `text` under that name when given.
std::unique_ptr<ParsedContract> parse_contract(const std::string& dir, const std::string& name,
                                               const std::optional<std::string>& text = std::nullopt) {
  auto c = std::make_unique<ParsedContract>();
  c->tree.MapPath("google/protobuf", protobuf_include_dir() + "/google/protobuf");
  c->tree.MapPath("", dir);
  if (text) c->tree.Override(name, *text);
  c->importer = std::make_unique<pb::compiler::Importer>(&c->tree, &c->errors);
  c->file = c->importer->Import(name);
  return c;
}

// ---- comparison -------------------------------------------------------------------------------

using Diffs = std::vector<std::string>;

std::string type_name(const pb::FieldDescriptor& f) {
  if (f.message_type()) return f.message_type()->full_name();
  if (f.enum_type()) return f.enum_type()->full_name();
  return "";
}

std::string label_name(const pb::FieldDescriptor& f) {
  switch (f.label()) {
    case pb::FieldDescriptor::LABEL_OPTIONAL: return "optional";
    case pb::FieldDescriptor::LABEL_REQUIRED: return "required";
    case pb::FieldDescriptor::LABEL_REPEATED: return "repeated";
  }
  return "?";
}

std::string oneof_name(const pb::FieldDescriptor& f) {
  const pb::OneofDescriptor* o = f.real_containing_oneof();
  return o ? o->name() : "";
}

std::string describe(const pb::FieldDescriptor& f) {
  // Singular proto3 fields carry no label in the source.
  std::string label = f.is_repeated() ? "repeated " : f.has_optional_keyword() ? "optional " : "";
  std::string s = label + (type_name(f).empty() ? f.type_name() : type_name(f)) + " " + f.name() + " = " +
                  std::to_string(f.number());
  if (!oneof_name(f).empty()) s += " (oneof " + oneof_name(f) + ")";
  return s;
}

template <typename T>
void add(Diffs& d, const std::string& where, const std::string& what, const T& ref, const T& ours) {
  if (ref == ours) return;
  std::ostringstream s;
  s << where << ": " << what << " differs: reference " << ref << ", Cove " << ours;
  d.push_back(s.str());
}

void diff_enum(const pb::EnumDescriptor& r, const pb::EnumDescriptor& o, Diffs& d) {
  const std::string where = "enum " + r.full_name();
  for (int i = 0; i < r.value_count(); ++i) {
    const auto* rv = r.value(i);
    const auto* ov = o.FindValueByName(rv->name());
    if (!ov) {
      d.push_back(where + ": value " + rv->name() + " = " + std::to_string(rv->number()) +
                  " is in the reference but not in Cove");
      continue;
    }
    add(d, where + "." + rv->name(), "number", rv->number(), ov->number());
  }
  for (int i = 0; i < o.value_count(); ++i) {
    if (!r.FindValueByName(o.value(i)->name())) {
      d.push_back(where + ": value " + o.value(i)->name() + " is in Cove but not in the reference");
    }
  }
}

void diff_message(const pb::Descriptor& r, const pb::Descriptor& o, Diffs& d) {
  const std::string where = "message " + r.full_name();
  for (int i = 0; i < r.field_count(); ++i) {
    const auto* rf = r.field(i);
    const auto* of = o.FindFieldByName(rf->name());
    if (!of) {
      d.push_back(where + ": field " + rf->name() + " (" + describe(*rf) + ") is in the reference but not in Cove");
      continue;
    }
    const std::string fw = where + "." + rf->name();
    add(d, fw, "number", rf->number(), of->number());
    add(d, fw, "type", std::string(rf->type_name()), std::string(of->type_name()));
    add(d, fw, "label", label_name(*rf), label_name(*of));
    add(d, fw, "type name", type_name(*rf), type_name(*of));
    add(d, fw, "oneof", oneof_name(*rf), oneof_name(*of));
    add(d, fw, "proto3 optional", rf->has_optional_keyword(), of->has_optional_keyword());
    add(d, fw, "map", rf->is_map(), of->is_map());
    add(d, fw, "json name", rf->json_name(), of->json_name());
    add(d, fw, "packed", rf->is_packed(), of->is_packed());
  }
  for (int i = 0; i < o.field_count(); ++i) {
    if (!r.FindFieldByName(o.field(i)->name())) {
      d.push_back(where + ": field " + o.field(i)->name() + " (" + describe(*o.field(i)) +
                  ") is in Cove but not in the reference");
    }
  }
  // Oneofs by name (members are covered per field; this catches an empty or renamed oneof).
  std::set<std::string> r_oneofs, o_oneofs;
  for (int i = 0; i < r.real_oneof_decl_count(); ++i) r_oneofs.insert(r.oneof_decl(i)->name());
  for (int i = 0; i < o.real_oneof_decl_count(); ++i) o_oneofs.insert(o.oneof_decl(i)->name());
  for (const auto& n : r_oneofs) {
    if (!o_oneofs.count(n)) d.push_back(where + ": oneof " + n + " is in the reference but not in Cove");
  }
  for (const auto& n : o_oneofs) {
    if (!r_oneofs.count(n)) d.push_back(where + ": oneof " + n + " is in Cove but not in the reference");
  }
  add(d, where, "map entry", r.options().map_entry(), o.options().map_entry());

  for (int i = 0; i < r.nested_type_count(); ++i) {
    const auto* rn = r.nested_type(i);
    if (const auto* on = o.FindNestedTypeByName(rn->name())) {
      diff_message(*rn, *on, d);
    } else {
      d.push_back(where + ": nested message " + rn->name() + " is in the reference but not in Cove");
    }
  }
  for (int i = 0; i < o.nested_type_count(); ++i) {
    if (!r.FindNestedTypeByName(o.nested_type(i)->name())) {
      d.push_back(where + ": nested message " + o.nested_type(i)->name() + " is in Cove but not in the reference");
    }
  }
  for (int i = 0; i < r.enum_type_count(); ++i) {
    const auto* re = r.enum_type(i);
    if (const auto* oe = o.FindEnumTypeByName(re->name())) {
      diff_enum(*re, *oe, d);
    } else {
      d.push_back(where + ": nested enum " + re->name() + " is in the reference but not in Cove");
    }
  }
  for (int i = 0; i < o.enum_type_count(); ++i) {
    if (!r.FindEnumTypeByName(o.enum_type(i)->name())) {
      d.push_back(where + ": nested enum " + o.enum_type(i)->name() + " is in Cove but not in the reference");
    }
  }
}

Diffs diff_files(const pb::FileDescriptor& r, const pb::FileDescriptor& o) {
  Diffs d;
  add(d, "file", "package", r.package(), o.package());
  add(d, "file", "syntax", std::string(pb::FileDescriptor::SyntaxName(r.syntax())),
      std::string(pb::FileDescriptor::SyntaxName(o.syntax())));
  std::set<std::string> r_deps, o_deps;
  for (int i = 0; i < r.dependency_count(); ++i) r_deps.insert(r.dependency(i)->name());
  for (int i = 0; i < o.dependency_count(); ++i) o_deps.insert(o.dependency(i)->name());
  for (const auto& n : r_deps) if (!o_deps.count(n)) d.push_back("file: import " + n + " missing in Cove");
  for (const auto& n : o_deps) if (!r_deps.count(n)) d.push_back("file: import " + n + " not in the reference");

  for (int i = 0; i < r.service_count(); ++i) {
    const auto* rs = r.service(i);
    const auto* os = o.FindServiceByName(rs->name());
    const std::string where = "service " + rs->full_name();
    if (!os) {
      d.push_back(where + " is in the reference but not in Cove");
      continue;
    }
    for (int m = 0; m < rs->method_count(); ++m) {
      const auto* rm = rs->method(m);
      const auto* om = os->FindMethodByName(rm->name());
      const std::string mw = where + "." + rm->name();
      if (!om) {
        d.push_back(mw + " is in the reference but not in Cove");
        continue;
      }
      add(d, mw, "input type", rm->input_type()->full_name(), om->input_type()->full_name());
      add(d, mw, "output type", rm->output_type()->full_name(), om->output_type()->full_name());
      add(d, mw, "client_streaming", rm->client_streaming(), om->client_streaming());
      add(d, mw, "server_streaming", rm->server_streaming(), om->server_streaming());
    }
    for (int m = 0; m < os->method_count(); ++m) {
      if (!rs->FindMethodByName(os->method(m)->name())) {
        d.push_back(where + "." + os->method(m)->name() + " is in Cove but not in the reference");
      }
    }
  }
  for (int i = 0; i < o.service_count(); ++i) {
    if (!r.FindServiceByName(o.service(i)->name())) {
      d.push_back("service " + o.service(i)->full_name() + " is in Cove but not in the reference");
    }
  }

  for (int i = 0; i < r.message_type_count(); ++i) {
    const auto* rm = r.message_type(i);
    if (const auto* om = o.FindMessageTypeByName(rm->name())) {
      diff_message(*rm, *om, d);
    } else {
      d.push_back("message " + rm->full_name() + " is in the reference but not in Cove");
    }
  }
  for (int i = 0; i < o.message_type_count(); ++i) {
    if (!r.FindMessageTypeByName(o.message_type(i)->name())) {
      d.push_back("message " + o.message_type(i)->full_name() + " is in Cove but not in the reference");
    }
  }
  for (int i = 0; i < r.enum_type_count(); ++i) {
    const auto* re = r.enum_type(i);
    if (const auto* oe = o.FindEnumTypeByName(re->name())) {
      diff_enum(*re, *oe, d);
    } else {
      d.push_back("enum " + re->full_name() + " is in the reference but not in Cove");
    }
  }
  for (int i = 0; i < o.enum_type_count(); ++i) {
    if (!r.FindEnumTypeByName(o.enum_type(i)->name())) {
      d.push_back("enum " + o.enum_type(i)->full_name() + " is in Cove but not in the reference");
    }
  }
  return d;
}

std::string join(const Diffs& d) {
  std::string out;
  for (const auto& line : d) out += "  - " + line + "\n";
  return out;
}

const pb::FileDescriptor* compiled_in(const std::string& contract) {
  if (contract == "process") return process::StartRequest::descriptor()->file();
  return filesystem::EntryInfo::descriptor()->file();
}

// Reference text for the checker's self-test: the shared reference when present, otherwise
// Cove's own copy (which matches the compiled-in descriptors by construction).
struct SourceText {
  std::string dir;
  std::string text;
};
SourceText self_test_source(const std::string& contract) {
  const std::string ref_dir = shared_spec_dir() + "/" + contract;
  if (std::filesystem::exists(ref_dir + "/" + contract + ".proto")) {
    return {ref_dir, read_text(ref_dir + "/" + contract + ".proto")};
  }
  return {COVE_REPO_PROTO_DIR, read_text(std::string(COVE_REPO_PROTO_DIR) + "/" + contract + ".proto")};
}

void check_against_reference(const std::string& contract) {
  const std::string dir = shared_spec_dir() + "/" + contract;
  const std::string file = dir + "/" + contract + ".proto";
  if (!std::filesystem::exists(file)) {
    GTEST_SKIP() << "reference contracts not found at " << file << " (set COVE_SHARED_SPEC)";
  }
  auto ref = parse_contract(dir, contract + ".proto");
  ASSERT_NE(ref->file, nullptr) << "cannot parse " << file << ":\n" << ref->errors.text;
  Diffs d = diff_files(*ref->file, *compiled_in(contract));
  EXPECT_TRUE(d.empty()) << "Cove's " << contract << ".proto drifted from " << file << " (" << d.size()
                         << " differences):\n"
                         << join(d);
}

struct Mutation {
  const char* original;     // must occur exactly once in the source text
  const char* replacement;
  std::vector<const char*> expect;  // each must appear in the reported differences
};

void check_mutations(const std::string& contract, const std::vector<Mutation>& mutations) {
  SourceText src = self_test_source(contract);
  ASSERT_FALSE(src.text.empty()) << "no source text for " << contract;
  const std::string name = contract + ".proto";

  // Unmodified text, through the same overlay path: no differences.
  auto clean = parse_contract(src.dir, name, src.text);
  ASSERT_NE(clean->file, nullptr) << clean->errors.text;
  Diffs none = diff_files(*clean->file, *compiled_in(contract));
  EXPECT_TRUE(none.empty()) << join(none);

  for (const auto& m : mutations) {
    const std::string original = m.original;
    const size_t pos = src.text.find(original);
    ASSERT_NE(pos, std::string::npos) << "mutation anchor not found: " << original;
    ASSERT_EQ(src.text.find(original, pos + 1), std::string::npos) << "mutation anchor not unique: " << original;
    std::string drifted = src.text;
    drifted.replace(pos, original.size(), m.replacement);

    auto parsed = parse_contract(src.dir, name, drifted);
    ASSERT_NE(parsed->file, nullptr) << "drifted text does not parse (" << original << " -> " << m.replacement
                                     << "):\n" << parsed->errors.text;
    Diffs d = diff_files(*parsed->file, *compiled_in(contract));
    EXPECT_FALSE(d.empty()) << "drift not detected: " << original << " -> " << m.replacement;
    const std::string all = join(d);
    for (const char* needle : m.expect) {
      EXPECT_NE(all.find(needle), std::string::npos)
          << "for " << original << " -> " << m.replacement << ", expected a difference mentioning '" << needle
          << "', got:\n" << all;
    }
  }
}

}  // namespace

TEST(ProtoDrift, ProcessMatchesReference) { check_against_reference("process"); }

TEST(ProtoDrift, FilesystemMatchesReference) { check_against_reference("filesystem"); }

TEST(ProtoDrift, CheckerDetectsProcessDrift) {
  check_mutations("process", {
      {"sint32 exit_code = 1;", "sint32 exit_status = 1;",
       {"message process.ProcessEvent.EndEvent: field exit_status", "field exit_code"}},
      {"rpc Start(StartRequest) returns (stream StartResponse);", "rpc Start(StartRequest) returns (StartResponse);",
       {"service process.Process.Start: server_streaming differs"}},
      {"rpc StreamInput(stream StreamInputRequest)", "rpc StreamInput(StreamInputRequest)",
       {"process.Process.StreamInput: client_streaming differs"}},
      {"rpc List(ListRequest) returns (ListResponse);", "rpc List(ListRequest) returns (ListRequest);",
       {"process.Process.List: output type differs"}},
      {"SIGNAL_SIGKILL = 9;", "SIGNAL_SIGKILL = 10;", {"enum process.Signal.SIGNAL_SIGKILL: number differs"}},
      {"optional string cwd = 4;", "string cwd = 4;", {"process.ProcessConfig.cwd: proto3 optional differs"}},
      {"uint32 pid = 2;", "uint32 pid = 5;", {"process.ProcessInfo.pid: number differs"}},
      {"bytes stdout = 1;", "string stdout = 1;", {"process.ProcessEvent.DataEvent.stdout: type differs"}},
      {"oneof output {", "oneof out {", {"oneof out", "process.ProcessEvent.DataEvent.pty: oneof differs"}},
      {"uint32 cols = 1;", "int32 cols = 1;", {"process.PTY.Size.cols: type differs"}},
      {"repeated string args = 2;", "string args = 2;", {"process.ProcessConfig.args: label differs"}},
      {"message ListRequest {}", "message ListRequest { string filter = 1; }",
       {"field filter", "in the reference but not in Cove"}},
      {"SIGNAL_SIGTERM = 15;", "SIGNAL_SIGTERM = 15; SIGNAL_SIGINT = 2;", {"value SIGNAL_SIGINT"}},
  });
}

TEST(ProtoDrift, CheckerDetectsFilesystemDrift) {
  check_mutations("filesystem", {
      {"int64 size = 4;", "uint64 size = 4;", {"filesystem.EntryInfo.size: type differs"}},
      {"google.protobuf.Timestamp modified_time = 9;", "int64 modified_time = 9;",
       {"filesystem.EntryInfo.modified_time: type differs", "type name differs"}},
      {"map<string, string> metadata = 11;", "repeated string metadata = 11;",
       {"filesystem.EntryInfo.metadata: type differs", "map differs", "nested message MetadataEntry"}},
      {"FILE_TYPE_SYMLINK = 3;", "", {"value FILE_TYPE_SYMLINK is in Cove but not in the reference"}},
      {"rpc RemoveWatcher(RemoveWatcherRequest) returns (RemoveWatcherResponse);", "",
       {"service filesystem.Filesystem.RemoveWatcher is in Cove but not in the reference"}},
  });
}

// The checker compares in both directions and names what differs; a wholly different file is
// not silently accepted.
TEST(ProtoDrift, CheckerRejectsTheOtherContract) {
  SourceText fs = self_test_source("filesystem");
  auto parsed = parse_contract(fs.dir, "filesystem.proto", fs.text);
  ASSERT_NE(parsed->file, nullptr) << parsed->errors.text;
  Diffs d = diff_files(*parsed->file, *compiled_in("process"));
  const std::string all = join(d);
  EXPECT_NE(all.find("package differs: reference filesystem, Cove process"), std::string::npos) << all;
  EXPECT_NE(all.find("service filesystem.Filesystem is in the reference but not in Cove"), std::string::npos) << all;
  EXPECT_NE(all.find("service process.Process is in Cove but not in the reference"), std::string::npos) << all;
}
