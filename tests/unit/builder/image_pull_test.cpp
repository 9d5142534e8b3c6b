// pull_image against a fake registry: a cpp-httplib HTTPS server on 127.0.0.1 with a throwaway
// self-signed certificate, serving two-layer images behind Basic auth (Docker schema 2) and behind
// Bearer token auth (OCI index → linux/amd64, blobs through a redirect). Checks layers, config,
// caching, certificate and host name verification, credentials handling and digest verification.
#include "rootfs-builder/image_pull.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "rootfs-builder/content_digest.hpp"
#include "rootfs-builder/image_layers.hpp"
#include "test_files.hpp"

namespace cove::builder {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::read_file;
using test::run;

const RegistryCredentials kCreds{"alice", "s3cret-pw"};
constexpr const char* kToken = "tok-123";

std::string base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  out.resize(static_cast<size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                 reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()))));
  return out;
}

// A self-signed certificate for IP 127.0.0.1 that is its own CA.
struct TestCert {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  TestCert() {
    key = EVP_EC_gen("P-256");
    cert = X509_new();
    if (!key || !cert) throw std::runtime_error("openssl");
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 42);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("cove test registry"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                                     std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                                     std::pair{NID_key_usage, "critical,digitalSignature,keyCertSign"},
                                     std::pair{NID_subject_key_identifier, "hash"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      if (!ext) throw std::runtime_error("openssl ext");
      X509_add_ext(cert, ext, -1);
      X509_EXTENSION_free(ext);
    }
    if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("openssl sign");
  }
  ~TestCert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  void write_pem(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
  }
};

struct Repo {
  enum class Auth { none, basic, bearer } auth = Auth::none;
  std::map<std::string, std::pair<std::string, std::string>> manifests;  // reference -> (content type, body)
  std::map<std::string, std::string> blobs;                              // digest -> served bytes
  bool redirect_blobs = false;
};

class FakeRegistry {
 public:
  explicit FakeRegistry(const TestCert& cert) : server_(cert.cert, cert.key) {
    server_.Get(R"(/v2/(.+)/manifests/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      const Repo* repo = authorised(req, res, req.matches[1]);
      if (!repo) return;
      const auto it = repo->manifests.find(req.matches[2]);
      if (it == repo->manifests.end()) return not_found(res, "MANIFEST_UNKNOWN");
      res.set_content(it->second.second, it->second.first.c_str());
    });
    server_.Get(R"(/v2/(.+)/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      const Repo* repo = authorised(req, res, req.matches[1]);
      if (!repo) return;
      ++blob_requests;
      if (repo->redirect_blobs) {
        res.status = 307;
        res.set_header("Location", "/cdn/" + std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
        return;
      }
      serve_blob(*repo, req.matches[2], res);
    });
    server_.Get(R"(/cdn/(.+)/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      const auto it = repos.find(req.matches[1]);
      if (it == repos.end()) return not_found(res, "NAME_UNKNOWN");
      ++cdn_requests;
      serve_blob(it->second, req.matches[2], res);
    });
    server_.Get("/token", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      ++token_requests;
      token_scope = req.get_param_value("scope");
      token_service = req.get_param_value("service");
      if (req.get_header_value("Authorization") != "Basic " + base64(kCreds.username + ":" + kCreds.password)) {
        res.status = 401;
        return;
      }
      res.set_content(json{{"token", kToken}}.dump(), "application/json");
    });
    port = server_.bind_to_any_port("127.0.0.1");
    if (port <= 0) throw std::runtime_error("bind failed");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeRegistry() {
    server_.stop();
    thread_.join();
  }

  std::map<std::string, Repo> repos;  // set up before the first request
  int port = 0;
  std::atomic<int> blob_requests{0}, cdn_requests{0}, token_requests{0};
  std::mutex mutex;
  std::string token_scope, token_service;

 private:
  static void not_found(httplib::Response& res, const char* code) {
    res.status = 404;
    res.set_content(json{{"errors", {{{"code", code}, {"message", "not here"}}}}}.dump(), "application/json");
  }
  void serve_blob(const Repo& repo, const std::string& digest, httplib::Response& res) {
    const auto it = repo.blobs.find(digest);
    if (it == repo.blobs.end()) return not_found(res, "BLOB_UNKNOWN");
    res.set_content(it->second, "application/octet-stream");
  }
  const Repo* authorised(const httplib::Request& req, httplib::Response& res, const std::string& name) {
    const auto it = repos.find(name);
    if (it == repos.end()) {
      not_found(res, "NAME_UNKNOWN");
      return nullptr;
    }
    const std::string auth = req.get_header_value("Authorization");
    switch (it->second.auth) {
      case Repo::Auth::none: return &it->second;
      case Repo::Auth::basic:
        if (auth == "Basic " + base64(kCreds.username + ":" + kCreds.password)) return &it->second;
        res.set_header("WWW-Authenticate", "Basic realm=\"fake\"");
        break;
      case Repo::Auth::bearer:
        if (auth == std::string("Bearer ") + kToken) return &it->second;
        res.set_header("WWW-Authenticate", "Bearer realm=\"https://127.0.0.1:" + std::to_string(port) +
                                               "/token\",service=\"fake-registry\",scope=\"repository:" + name + ":pull\"");
        break;
    }
    res.status = 401;
    res.set_content(R"({"errors":[{"code":"UNAUTHORIZED"}]})", "application/json");
    return nullptr;
  }

  httplib::SSLServer server_;
  std::thread thread_;
};

// A two-layer image: the lower layer has etc/hello and etc/gone, the upper whites out etc/gone
// and adds etc/new.
struct TestImage {
  std::string layer1, layer2, config;
  std::string d1, d2, dc;
  TestImage(const std::string& work) {
    run("mkdir -p '" + work + "/l1/etc' '" + work + "/l2/etc' && printf 'hello\\n' > '" + work +
        "/l1/etc/hello' && echo gone > '" + work + "/l1/etc/gone' && touch '" + work + "/l2/etc/.wh.gone' && echo new > '" +
        work + "/l2/etc/new' && chown 1000:1000 '" + work + "/l1/etc/hello'");
    run("tar --numeric-owner -C '" + work + "/l1' -czf '" + work + "/l1.tgz' . && tar --numeric-owner -C '" + work +
        "/l2' -czf '" + work + "/l2.tgz' .");
    layer1 = read_file(work + "/l1.tgz");
    layer2 = read_file(work + "/l2.tgz");
    config = json{{"architecture", "amd64"},
                  {"os", "linux"},
                  {"config",
                   {{"Env", {"PATH=/usr/bin:/bin", "GREETING=hi there"}},
                    {"WorkingDir", "/srv"},
                    {"User", "1000"},
                    {"Entrypoint", {"/bin/sh"}},
                    {"Cmd", {"-c", "echo hi"}}}},
                  {"rootfs", {{"type", "layers"}, {"diff_ids", json::array()}}}}
                 .dump();
    d1 = sha256_digest_of(layer1);
    d2 = sha256_digest_of(layer2);
    dc = sha256_digest_of(config);
  }
  std::string manifest(bool oci, const std::string& layer_type = "") const {
    const std::string lt = !layer_type.empty() ? layer_type
                           : oci            ? "application/vnd.oci.image.layer.v1.tar+gzip"
                                            : "application/vnd.docker.image.rootfs.diff.tar.gzip";
    return json{{"schemaVersion", 2},
                {"mediaType", oci ? media_type::kOciManifest : media_type::kDockerManifest},
                {"config", {{"mediaType", oci ? media_type::kOciConfig : media_type::kDockerConfig},
                            {"digest", dc}, {"size", config.size()}}},
                {"layers", json::array({{{"mediaType", lt}, {"digest", d1}, {"size", layer1.size()}},
                                        {{"mediaType", lt}, {"digest", d2}, {"size", layer2.size()}}})}}
        .dump();
  }
  std::map<std::string, std::string> blobs() const { return {{d1, layer1}, {d2, layer2}, {dc, config}}; }
};

class ImagePull : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new std::string(fs::temp_directory_path().string() + "/cove-pull-test." + std::to_string(::getpid()));
    fs::create_directories(*work_);
    cert_ = new TestCert();
    cert_->write_pem(*work_ + "/ca.pem");
    image_ = new TestImage(*work_);
    registry_ = new FakeRegistry(*cert_);

    Repo basic;
    basic.auth = Repo::Auth::basic;
    const std::string docker_manifest = image_->manifest(false);
    basic.manifests["1"] = {std::string(media_type::kDockerManifest), docker_manifest};
    basic.manifests[sha256_digest_of(docker_manifest)] = basic.manifests["1"];
    basic.blobs = image_->blobs();
    registry_->repos["basic/img"] = basic;

    Repo bearer;
    bearer.auth = Repo::Auth::bearer;
    bearer.redirect_blobs = true;
    const std::string oci_manifest = image_->manifest(true);
    const std::string other = json{{"schemaVersion", 2}}.dump();  // the arm64 entry is never fetched
    auto entry = [](const std::string& body, const char* arch) {
      return json{{"mediaType", media_type::kOciManifest},
                  {"digest", sha256_digest_of(body)},
                  {"size", body.size()},
                  {"platform", {{"os", "linux"}, {"architecture", arch}}}};
    };
    const std::string index = json{{"schemaVersion", 2},
                                   {"mediaType", media_type::kOciIndex},
                                   {"manifests", json::array({entry(other, "arm64"), entry(oci_manifest, "amd64")})}}
                                  .dump();
    bearer.manifests["latest"] = {std::string(media_type::kOciIndex), index};
    bearer.manifests[sha256_digest_of(oci_manifest)] = {std::string(media_type::kOciManifest), oci_manifest};
    bearer.blobs = image_->blobs();
    registry_->repos["bearer/img"] = bearer;

    // Serves a manifest for any reference and a damaged upper layer.
    Repo corrupt;
    const std::string corrupt_manifest = image_->manifest(false);
    corrupt.manifests["1"] = {std::string(media_type::kDockerManifest), corrupt_manifest};
    corrupt.manifests["sha256:" + std::string(64, 'e')] = corrupt.manifests["1"];
    corrupt.blobs = image_->blobs();
    corrupt.blobs[image_->d2][100] ^= 0x55;
    registry_->repos["corrupt/img"] = corrupt;

    Repo zstd;
    zstd.manifests["1"] = {std::string(media_type::kOciManifest),
                           image_->manifest(true, "application/vnd.oci.image.layer.v1.tar+zstd")};
    zstd.blobs = image_->blobs();
    registry_->repos["zstd/img"] = zstd;
  }
  static void TearDownTestSuite() {
    delete registry_;
    delete image_;
    delete cert_;
    std::error_code ec;
    fs::remove_all(*work_, ec);
    delete work_;
  }

  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "pull tests unpack layers with their owners: they need root";
    store_dir_ = *work_ + "/store-" + std::to_string(counter_++);
    store_ = std::make_unique<LayerStore>(store_dir_);
    options_.ca_file = *work_ + "/ca.pem";
    options_.timeout = std::chrono::seconds(10);
  }

  std::string ref(const std::string& repo_and_tag, const std::string& host = "127.0.0.1") const {
    return host + ":" + std::to_string(registry_->port) + "/" + repo_and_tag;
  }
  PulledImage pull(const std::string& reference, const std::optional<RegistryCredentials>& creds) {
    log_.clear();
    return pull_image(reference, creds, *store_, options_, [&](const std::string& line) { log_.push_back(line); });
  }
  std::string pull_error(const std::string& reference, const std::optional<RegistryCredentials>& creds) {
    try {
      pull(reference, creds);
    } catch (const PullError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find(kCreds.password), std::string::npos) << msg;
      EXPECT_EQ(msg.find(*work_), std::string::npos) << "a host path in: " << msg;
      return msg;
    }
    ADD_FAILURE() << "pull succeeded: " << reference;
    return "";
  }
  size_t count_log(const std::string& needle) const {
    size_t n = 0;
    for (const auto& l : log_) n += l.find(needle) != std::string::npos;
    return n;
  }
  std::vector<std::string> store_entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(store_dir_)) out.push_back(e.path().filename().string());
    return out;
  }

  void expect_image(const PulledImage& img) {
    ASSERT_EQ(img.layers.size(), 2u);
    EXPECT_EQ(img.layers[0], store_->path(oci_layer_key(image_->d2)));  // uppermost first
    EXPECT_EQ(img.layers[1], store_->path(oci_layer_key(image_->d1)));
    EXPECT_EQ(read_file(img.layers[1] + "/etc/hello"), "hello\n");
    struct stat st {};
    ASSERT_EQ(::lstat((img.layers[1] + "/etc/hello").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 1000u);  // archived owner kept
    ASSERT_EQ(::lstat((img.layers[0] + "/etc/gone").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) << "the whiteout is not an overlay whiteout";
    EXPECT_EQ(read_file(img.layers[0] + "/etc/new"), "new\n");
    const std::vector<std::pair<std::string, std::string>> env = {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hi there"}};
    EXPECT_EQ(img.config.env, env);
    EXPECT_EQ(img.config.workdir, "/srv");
    EXPECT_EQ(img.config.user, "1000");
    EXPECT_EQ(img.config.entrypoint, std::vector<std::string>{"/bin/sh"});
    EXPECT_EQ(img.config.cmd, (std::vector<std::string>{"-c", "echo hi"}));
  }

  static inline std::string* work_ = nullptr;
  static inline TestCert* cert_ = nullptr;
  static inline TestImage* image_ = nullptr;
  static inline FakeRegistry* registry_ = nullptr;
  static inline int counter_ = 0;
  std::string store_dir_;
  std::unique_ptr<LayerStore> store_;
  RegistryOptions options_;
  std::vector<std::string> log_;
};

TEST_F(ImagePull, BasicAuthTwoLayerImageThenEverythingCached) {
  const int blobs_before = registry_->blob_requests;
  const PulledImage img = pull(ref("basic/img:1"), kCreds);
  expect_image(img);
  EXPECT_EQ(img.manifest_digest, sha256_digest_of(image_->manifest(false)));
  EXPECT_EQ(img.reference, ref("basic/img:1"));
  ASSERT_FALSE(log_.empty());
  EXPECT_EQ(log_[0], "Pulling " + ref("basic/img:1"));
  EXPECT_EQ(count_log("Layer " + image_->d1.substr(0, 19) + " "), 1u);
  EXPECT_EQ(count_log(" MiB"), 2u);
  EXPECT_EQ(registry_->blob_requests - blobs_before, 3);  // config + two layers

  // Again, by digest this time: the config is fetched, no layer is.
  const int blobs_again = registry_->blob_requests;
  const PulledImage again = pull(ref("basic/img@" + img.manifest_digest), kCreds);
  EXPECT_EQ(again.layers, img.layers);
  EXPECT_EQ(registry_->blob_requests - blobs_again, 1);
  EXPECT_EQ(count_log(" cached"), 2u);
  EXPECT_EQ(count_log(" MiB"), 0u);
  for (const auto& name : store_entries()) EXPECT_EQ(name.rfind(".staging-", 0), std::string::npos) << name;
}

TEST_F(ImagePull, BasicAuthNeedsTheRightCredentials) {
  EXPECT_NE(pull_error(ref("basic/img:1"), std::nullopt).find("requires credentials"), std::string::npos);
  EXPECT_NE(pull_error(ref("basic/img:1"), RegistryCredentials{"alice", "wrong"}).find("refused the credentials"),
            std::string::npos);
  EXPECT_NE(pull_error(ref("basic/img:2"), kCreds).find("not found"), std::string::npos);
  EXPECT_NE(pull_error(ref("nobody/img:1"), kCreds).find("NAME_UNKNOWN"), std::string::npos);
  EXPECT_TRUE(store_entries().empty());
}

TEST_F(ImagePull, BearerTokenThroughAnIndexAndARedirect) {
  const int tokens_before = registry_->token_requests, cdn_before = registry_->cdn_requests;
  const PulledImage img = pull(ref("bearer/img"), kCreds);  // tag defaults to latest
  expect_image(img);
  EXPECT_EQ(img.manifest_digest, sha256_digest_of(image_->manifest(true)));  // the amd64 manifest, not the index
  EXPECT_EQ(registry_->token_requests - tokens_before, 1);  // one token serves the whole pull
  EXPECT_EQ(registry_->cdn_requests - cdn_before, 3);
  {
    std::lock_guard<std::mutex> lock(registry_->mutex);
    EXPECT_EQ(registry_->token_scope, "repository:bearer/img:pull");
    EXPECT_EQ(registry_->token_service, "fake-registry");
  }
  EXPECT_NE(pull_error(ref("bearer/img"), RegistryCredentials{"alice", "nope"}).find("token service refused the credentials"),
            std::string::npos);
  EXPECT_NE(pull_error(ref("bearer/img"), std::nullopt).find("token service requires credentials"), std::string::npos);
}

TEST_F(ImagePull, ServerCertificateAndHostNameAreVerified) {
  options_.ca_file.clear();  // the system store does not know the test CA
  EXPECT_NE(pull_error(ref("basic/img:1"), kCreds).find("certificate could not be verified"), std::string::npos);
  options_.ca_file = *work_ + "/ca.pem";
  // The certificate names 127.0.0.1, not localhost.
  EXPECT_NE(pull_error(ref("basic/img:1", "localhost"), kCreds).find("certificate could not be verified"), std::string::npos);
  options_.ca_file = *work_ + "/missing.pem";
  EXPECT_NE(pull_error(ref("basic/img:1"), kCreds).find("cannot be loaded"), std::string::npos);
}

TEST_F(ImagePull, DigestMismatchesAreRefusedAndLeaveNothing) {
  const std::string err = pull_error(ref("corrupt/img:1"), std::nullopt);
  EXPECT_NE(err.find("layer digest mismatch"), std::string::npos) << err;
  EXPECT_FALSE(store_->has(oci_layer_key(image_->d2)));
  for (const auto& name : store_entries()) EXPECT_EQ(name.rfind(".staging-", 0), std::string::npos) << name;
  // A manifest asked for by digest must hash to it.
  const std::string m = pull_error(ref("corrupt/img@sha256:" + std::string(64, 'e')), std::nullopt);
  EXPECT_NE(m.find("manifest digest mismatch"), std::string::npos) << m;
}

TEST_F(ImagePull, ZstdLayersAndBadReferencesAreRefusedBeforeDownloading) {
  const int blobs_before = registry_->blob_requests;
  EXPECT_NE(pull_error(ref("zstd/img:1"), std::nullopt).find("zstd"), std::string::npos);
  EXPECT_EQ(registry_->blob_requests, blobs_before);
  EXPECT_NE(pull_error("Bad/Ref:x:y", std::nullopt).find("invalid image reference"), std::string::npos);
}

}  // namespace
}  // namespace cove::builder
