#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "interpreter/execution_output.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::json;

Json only_line(const ExecutionEvent& event) {
  auto lines = lines_for_event(event);
  EXPECT_EQ(lines.size(), 1u);
  if (lines.empty()) return nullptr;
  EXPECT_EQ(lines[0].back(), '\n');
  return Json::parse(lines[0]);
}

TEST(ExecutionOutput, ExecutionCount) {
  auto j = only_line(ExecutionStarted{3});
  EXPECT_EQ(j, (Json{{"type", "number_of_executions"}, {"execution_count", 3}}));
}

TEST(ExecutionOutput, StreamsCarryTextAndTimestamp) {
  auto out = only_line(StreamOutput{false, "hi\n", "2026-11-30T06:53:49.077610+00:00"});
  EXPECT_EQ(out, (Json{{"type", "stdout"}, {"text", "hi\n"}, {"timestamp", "2026-11-30T06:53:49.077610+00:00"}}));
  auto err = only_line(StreamOutput{true, "oops", "t"});
  EXPECT_EQ(err["type"], "stderr");
  EXPECT_TRUE(lines_for_event(StreamOutput{false, "", "t"}).empty());  // never an empty chunk
}

TEST(ExecutionOutput, ErrorHasAllThreeStrings) {
  auto j = only_line(ExecutionFailed{"ZeroDivisionError", "division by zero", "Traceback..."});
  EXPECT_EQ(j, (Json{{"type", "error"}, {"name", "ZeroDivisionError"}, {"value", "division by zero"}, {"traceback", "Traceback..."}}));
}

TEST(ExecutionOutput, DisplayBecomesResult) {
  auto j = only_line(DisplayOutput{Json{{"text/plain", "2"}}, true});
  EXPECT_EQ(j["type"], "result");
  EXPECT_EQ(j["text"], "2");
  EXPECT_EQ(j["is_main_result"], true);
}

TEST(ExecutionOutput, FinishStatusesMapToE2bErrors) {
  EXPECT_TRUE(lines_for_event(ExecutionFinished{ExecutionFinished::Status::ok}).empty());
  auto aborted = only_line(ExecutionFinished{ExecutionFinished::Status::aborted});
  EXPECT_EQ(aborted["name"], "ExecutionAborted");
  EXPECT_EQ(aborted["value"], "Execution was aborted");
  auto restarting = only_line(ExecutionFinished{ExecutionFinished::Status::restarting});
  EXPECT_EQ(restarting["name"], "ContextRestarting");
  EXPECT_EQ(restarting["value"], "Context was restarted");
  auto lost = only_line(ExecutionFinished{ExecutionFinished::Status::lost});
  EXPECT_EQ(lost["name"], "UnexpectedEndOfExecution");
  EXPECT_EQ(lost["traceback"], "");
}

TEST(ExecutionOutput, FixedLines) {
  EXPECT_EQ(Json::parse(end_of_execution_line()), (Json{{"type", "end_of_execution"}}));
  EXPECT_EQ(Json::parse(keepalive_line()), (Json{{"type", "keepalive"}}));
  EXPECT_EQ(end_of_execution_line().back(), '\n');
}

}  // namespace
}  // namespace cove::interpreter
