#include <gtest/gtest.h>

#include "rootfs-builder/build_plan.hpp"

namespace cove::builder {
namespace {

constexpr const char* kHash = "0ebdfe83a2b1c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b1424";

TEST(BuildPlan, ParsesWhatTheSdkSends) {
  std::string body = std::string(R"({"startCmd":"python3 -m http.server 3000","readyCmd":"ss -Htuln","steps":[
    {"type":"RUN","args":["id -u","root"],"force":false},
    {"type":"COPY","args":["hello.txt","/app/","user","0755"],"force":false,"filesHash":")") + kHash + R"("},
    {"type":"ENV","args":["A","1","B","two words"],"force":false},
    {"type":"WORKDIR","args":["/app"],"force":false},
    {"type":"USER","args":["user"],"force":true}],"force":false,"fromTemplate":"base"})";
  BuildPlan plan = parse_build_plan(body);
  EXPECT_EQ(plan.from_template, "base");
  EXPECT_EQ(plan.start_cmd, "python3 -m http.server 3000");
  EXPECT_EQ(plan.ready_cmd, "ss -Htuln");
  ASSERT_EQ(plan.steps.size(), 5u);
  EXPECT_EQ(plan.steps[0].kind, StepKind::run);
  EXPECT_EQ(plan.steps[1].kind, StepKind::copy);
  EXPECT_EQ(plan.steps[1].files_hash, kHash);
  EXPECT_EQ(plan.steps[2].kind, StepKind::env);
  EXPECT_TRUE(plan.steps[4].force);
  EXPECT_EQ(describe(plan.steps[1]), "COPY hello.txt /app/");
}

TEST(BuildPlan, DefaultsToBaseAndReadsRegistryCredentials) {
  auto plan = parse_build_plan(R"({"fromImage":"python:3.12","fromImageRegistry":{"type":"registry","username":"u","password":"p"}})");
  EXPECT_EQ(plan.from_image, "python:3.12");
  ASSERT_TRUE(plan.registry);
  EXPECT_EQ(plan.registry->username, "u");
  EXPECT_EQ(parse_build_plan("{}").from_template, "base");
}

TEST(BuildPlan, RefusesMalformedRequests) {
  for (const char* bad : {
           "not json", "[]", R"({"fromTemplate":"a","fromImage":"b"})", R"({"steps":{}})",
           R"({"steps":[{"type":"FROB","args":[]}]})", R"({"steps":[{"type":"RUN","args":[]}]})",
           R"({"steps":[{"type":"RUN","args":[1]}]})", R"({"steps":[{"type":"COPY","args":["a","/b"]}]})",
           R"({"steps":[{"type":"COPY","args":["a","/b","","9999"],"filesHash":"x"}]})",
           R"({"steps":[{"type":"ENV","args":["A"]}]})", R"({"steps":[{"type":"ENV","args":["A=B","c"]}]})",
           R"({"steps":[{"type":"WORKDIR","args":[]}]})", R"({"steps":[{"type":"USER","args":["a","b"]}]})",
           R"({"force":"yes"})", R"({"fromImageRegistry":{"type":"aws"}})"}) {
    EXPECT_THROW(parse_build_plan(bad), BuildPlanError) << bad;
  }
}

TEST(BuildPlan, ContextStepsChangeEnvWorkdirAndUser) {
  StepContext ctx;
  apply_context_step(Step{StepKind::env, {"A", "1", "B", "2"}}, ctx);
  apply_context_step(Step{StepKind::env, {"A", "3"}}, ctx);
  apply_context_step(Step{StepKind::workdir, {"/app"}}, ctx);
  apply_context_step(Step{StepKind::workdir, {"sub"}}, ctx);
  apply_context_step(Step{StepKind::user, {"user"}}, ctx);
  EXPECT_EQ(ctx.env, (std::vector<std::pair<std::string, std::string>>{{"A", "3"}, {"B", "2"}}));
  EXPECT_EQ(ctx.workdir, "/app/sub");
  EXPECT_EQ(ctx.user, "user");
  EXPECT_TRUE(makes_layer(Step{StepKind::run, {"x"}}));
  EXPECT_FALSE(makes_layer(Step{StepKind::env, {"A", "1"}}));
}

TEST(LayerKeys, DependOnParentStepFilesAndContext) {
  Step run{StepKind::run, {"make"}};
  StepContext ctx;
  std::string base = base_layer_key({"/layers/base"});
  EXPECT_EQ(base.size(), 64u);
  std::string key = layer_key(base, run, ctx);
  EXPECT_EQ(key, layer_key(base, run, ctx));  // deterministic: the cache works
  EXPECT_NE(key, layer_key(base_layer_key({"/layers/other"}), run, ctx));
  EXPECT_NE(key, layer_key(base, Step{StepKind::run, {"make", "user"}}, ctx));
  StepContext env = ctx;
  env.env = {{"A", "1"}};
  EXPECT_NE(key, layer_key(base, run, env));
  StepContext user = ctx;
  user.user = "user";
  EXPECT_NE(key, layer_key(base, run, user));
  StepContext dir = ctx;
  dir.workdir = "/app";
  EXPECT_NE(key, layer_key(base, run, dir));
  Step copy_a{StepKind::copy, {"a", "/b"}, false, std::string(64, 'a')};
  Step copy_b{StepKind::copy, {"a", "/b"}, false, std::string(64, 'b')};
  EXPECT_NE(layer_key(base, copy_a, ctx), layer_key(base, copy_b, ctx));
  // Argument boundaries matter: ["ab","c"] is not ["a","bc"].
  EXPECT_NE(layer_key(base, Step{StepKind::env, {"ab", "c"}}, ctx), layer_key(base, Step{StepKind::env, {"a", "bc"}}, ctx));
  EXPECT_NE(forced_layer_key(key, "b1"), forced_layer_key(key, "b2"));
  EXPECT_NE(forced_layer_key(key, "b1"), key);
}

TEST(LayerKeys, FilesHashMustBeHex64) {
  EXPECT_TRUE(valid_files_hash(kHash));
  EXPECT_FALSE(valid_files_hash(""));
  EXPECT_FALSE(valid_files_hash(std::string(63, 'a')));
  EXPECT_FALSE(valid_files_hash(std::string(64, 'A')));
  EXPECT_FALSE(valid_files_hash("../" + std::string(61, 'a')));
}

}  // namespace
}  // namespace cove::builder
