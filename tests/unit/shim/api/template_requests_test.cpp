#include <gtest/gtest.h>

#include "api/errors.hpp"
#include "api/template_requests.hpp"

namespace cove::shim::api {
namespace {

TEST(TemplateRequests, RegistrationAsTheSdkSendsIt) {
  auto reg = parse_template_registration(R"({"name":"my-tpl","tags":["v1"],"cpuCount":2,"memoryMB":384})");
  EXPECT_EQ(reg.name, "my-tpl");
  EXPECT_EQ(reg.tags, std::vector<std::string>{"v1"});
  EXPECT_EQ(reg.cpu_count, 2);
  EXPECT_EQ(reg.memory_mb, 384);
  auto minimal = parse_template_registration(R"({"alias":"x"})");
  EXPECT_EQ(minimal.name, "x");
  EXPECT_FALSE(minimal.cpu_count);
}

TEST(TemplateRequests, MalformedBodiesAre400WithoutEchoingThem) {
  for (const char* bad : {"", "[]", "{}", R"({"name":5})", R"({"name":"a","tags":"v1"})",
                          R"({"name":"a","tags":[1]})", R"({"name":"a","cpuCount":"2"})",
                          R"({"name":"a","memoryMB":99999999999})"}) {
    try {
      parse_template_registration(bad);
      ADD_FAILURE() << bad;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << bad;
      EXPECT_EQ(std::string(e.what()).find("99999999999"), std::string::npos);
    }
  }
  EXPECT_THROW(parse_tags_assignment(R"({"tags":["a"]})"), ApiError);
  EXPECT_THROW(parse_tags_removal(R"({"name":"a","tags":[true]})"), ApiError);
  auto [target, tags] = parse_tags_assignment(R"({"target":"app:v1","tags":["stable","prod"]})");
  EXPECT_EQ(target, "app:v1");
  EXPECT_EQ(tags.size(), 2u);
}

TEST(TemplateResponses, BuildStatusAsTheSdkPollsIt) {
  BuildStatusPage page;
  page.template_id = "t";
  page.build_id = "b";
  page.status = BuildStatus::error;
  page.reason = "Step 2 (RUN exit 3) failed: exit status 3";
  page.reason_step = "2";
  page.entries = {{Clock::time_point{}, "info", "[builder 1/2] RUN true", "1"}, {Clock::time_point{}, "error", "x", ""}};
  auto j = build_status_json(page);
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["reason"]["message"], page.reason);
  EXPECT_EQ(j["reason"]["step"], "2");
  ASSERT_EQ(j["logEntries"].size(), 2u);
  EXPECT_EQ(j["logEntries"][0]["step"], "1");
  EXPECT_FALSE(j["logEntries"][1].contains("step"));
  EXPECT_EQ(j["logs"][0], "[builder 1/2] RUN true");
  page.status = BuildStatus::building;
  EXPECT_FALSE(build_status_json(page).contains("reason"));  // only an error has a reason
}

}  // namespace
}  // namespace cove::shim::api
