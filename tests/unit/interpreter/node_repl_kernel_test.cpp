// NodeReplKernel against the real node on this host (Debian's node-typescript for TypeScript).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "interpreter/node_repl_kernel.hpp"
#include "repl_kernel_fixture.hpp"

namespace cove::interpreter {
namespace {

using namespace std::chrono_literals;

using testing::Collected;

class NodeReplKernelTest : public testing::ReplKernelFixture<NodeReplKernel> {
 protected:
  NodeReplKernelTest() : ReplKernelFixture("javascript") {}
};

TEST_F(NodeReplKernelTest, LastExpressionIsTheMainResult) {
  start();
  auto c = exec("1+1");
  EXPECT_EQ(c.main_text(), "2");
  EXPECT_EQ(c.count(), 1);
  EXPECT_FALSE(c.error());
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  auto s = exec("'abc'");
  EXPECT_EQ(s.main_text(), "'abc'");  // util.inspect; E2B strips the quotes itself
  EXPECT_EQ(s.count(), 2);
  auto none = exec("undefined");
  EXPECT_FALSE(none.main_text());
  auto promise = exec("Promise.resolve({a: [1, 2]})");
  EXPECT_EQ(promise.main_text(), "{ a: [ 1, 2 ] }");
}

TEST_F(NodeReplKernelTest, StatePersistsBetweenCells) {
  start();
  EXPECT_FALSE(exec("const x = 5").main_text());
  EXPECT_EQ(exec("x*2").main_text(), "10");
  exec("function twice(v) { return 2 * v }");
  EXPECT_EQ(exec("twice(x)").main_text(), "10");
  EXPECT_EQ(exec("require('path').join('a', 'b')").main_text(), "'a/b'");
}

TEST_F(NodeReplKernelTest, ConsoleOutputGoesToItsStreams) {
  start();
  auto c = exec("console.log('out1'); console.error('err1'); process.stdout.write('out2\\n'); 7");
  EXPECT_EQ(c.stream(false), "out1\nout2\n");
  EXPECT_EQ(c.stream(true), "err1\n");
  EXPECT_EQ(c.main_text(), "7");
  // Output is reported before the result, and each chunk carries a timestamp.
  ASSERT_GE(c.events.size(), 4u);
  auto* first = std::get_if<StreamOutput>(&c.events[1]);
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(first->is_stderr);
  EXPECT_EQ(first->text.substr(0, 5), "out1\n");
  EXPECT_EQ(first->timestamp.size(), std::string("2026-11-30T06:53:49.077610+00:00").size());
  EXPECT_TRUE(std::holds_alternative<DisplayOutput>(c.events[c.events.size() - 2]));
}

TEST_F(NodeReplKernelTest, ChildProcessOutputIsCaptured) {
  start();
  auto c = exec("require('child_process').execSync('echo from-child; echo err-child >&2', {stdio: 'inherit'}); 1");
  EXPECT_EQ(c.stream(false), "from-child\n");
  EXPECT_EQ(c.stream(true), "err-child\n");
}

TEST_F(NodeReplKernelTest, ThrownErrorsBecomeExecutionFailed) {
  start();
  auto c = exec("throw new TypeError('bad thing')");
  ASSERT_TRUE(c.error());
  EXPECT_EQ(c.error()->name, "TypeError");
  EXPECT_EQ(c.error()->value, "bad thing");
  EXPECT_NE(c.error()->traceback.find("TypeError: bad thing"), std::string::npos);
  EXPECT_EQ(c.error()->traceback.find("repl.js"), std::string::npos) << c.error()->traceback;
  EXPECT_FALSE(c.main_text());
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  auto r = exec("notDefinedAnywhere + 1");
  ASSERT_TRUE(r.error());
  EXPECT_EQ(r.error()->name, "ReferenceError");
  EXPECT_EQ(r.error()->value, "notDefinedAnywhere is not defined");
  auto rejected = exec("Promise.reject(new RangeError('nope'))");
  ASSERT_TRUE(rejected.error());
  EXPECT_EQ(rejected.error()->name, "RangeError");
  auto syntax = exec("let = = 3");
  ASSERT_TRUE(syntax.error());
  EXPECT_EQ(syntax.error()->name, "SyntaxError");
  EXPECT_EQ(exec("1+1").main_text(), "2");
}

TEST_F(NodeReplKernelTest, TopLevelAwaitKeepsDeclarations) {
  start();
  EXPECT_EQ(exec("await new Promise(r => setTimeout(r, 100)); 5").main_text(), "5");
  auto c = exec("const v = await Promise.resolve(7); function plus(a) { return a + v } plus(1)");
  EXPECT_FALSE(c.error()) << c.error()->value;
  EXPECT_EQ(c.main_text(), "8");
  EXPECT_EQ(exec("v + plus(2)").main_text(), "16");
}

TEST_F(NodeReplKernelTest, InterruptStopsABusyLoopAndAPendingAwait) {
  start();
  auto loop = exec("while (true) {}", false, 300ms);
  ASSERT_TRUE(loop.error());
  EXPECT_EQ(loop.error()->name, "KeyboardInterrupt");
  EXPECT_EQ(loop.status(), ExecutionFinished::Status::ok);
  EXPECT_EQ(exec("1+1").main_text(), "2");
  auto wait = exec("await new Promise(() => {})", false, 300ms);
  ASSERT_TRUE(wait.error());
  EXPECT_EQ(wait.error()->name, "KeyboardInterrupt");
  EXPECT_EQ(wait.status(), ExecutionFinished::Status::ok);
  EXPECT_EQ(exec("1+2").main_text(), "3");
}

TEST_F(NodeReplKernelTest, TypeScriptCellsAreTranspiled) {
  start("typescript");
  auto c = exec("const n: number = 3; n + 1");
  EXPECT_FALSE(c.error()) << c.error()->value;
  EXPECT_EQ(c.main_text(), "4");
  EXPECT_EQ(exec("interface P { a: number }\nconst p: P = { a: 2 };\np.a * n").main_text(), "6");
  auto bad = exec("let broken: = 3");
  ASSERT_TRUE(bad.error());
  EXPECT_EQ(bad.error()->name, "SyntaxError");
}

TEST_F(NodeReplKernelTest, RestartDropsState) {
  start();
  exec("globalThis.kept = 1; const y = 2");
  run([this]() -> net::awaitable<void> { co_await kernel_->restart(); });
  auto c = exec("y");
  ASSERT_TRUE(c.error());
  EXPECT_EQ(c.error()->name, "ReferenceError");
  EXPECT_EQ(c.count(), 1);  // a fresh kernel counts from 1
}

TEST_F(NodeReplKernelTest, ProcessExitRestartsTheKernel) {
  start();
  exec("const z = 1");
  auto c = exec("console.log('bye'); process.exit(1)");
  EXPECT_EQ(c.stream(false), "bye\n");
  EXPECT_EQ(c.status(), ExecutionFinished::Status::restarting);
  EXPECT_EQ(exec("1+1").main_text(), "2");
  EXPECT_EQ(exec("typeof z").main_text(), "'undefined'");
}

TEST_F(NodeReplKernelTest, NonAsciiOutputIsIntact) {
  start();
  auto c = exec("console.log('héllo ✓ 日本 🎉'); 'ü'");
  EXPECT_EQ(c.stream(false), "héllo ✓ 日本 🎉\n");
  EXPECT_EQ(c.main_text(), "'ü'");
  // Far more than one pipe read: no character may be cut in two between chunks.
  auto big = exec("process.stdout.write('é'.repeat(200000)); 0");
  EXPECT_EQ(big.stream(false).size(), 400000u);
  for (const auto& e : big.events) {
    if (auto* s = std::get_if<StreamOutput>(&e)) {
      EXPECT_EQ(s->text.size() % 2, 0u);
    }
  }
}

TEST_F(NodeReplKernelTest, SilentCellsAreNotCountedAndShowNoResult) {
  start();
  auto c = exec("process.env['COVE_T'] = 'v'", true);
  EXPECT_FALSE(c.count());
  EXPECT_FALSE(c.main_text());
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  auto d = exec("process.env.COVE_T");
  EXPECT_EQ(d.main_text(), "'v'");
  EXPECT_EQ(d.count(), 1);
}

TEST_F(NodeReplKernelTest, ShutdownLeavesNoProcess) {
  start();
  auto c = exec("process.pid");
  ASSERT_TRUE(c.main_text());
  pid_t pid = std::stoi(*c.main_text());
  run([this]() -> net::awaitable<void> { co_await kernel_->shutdown(); });
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  kernel_.reset();
}

TEST_F(NodeReplKernelTest, BadWorkingDirectoryIsAKernelError) {
  kernel_ = std::make_unique<NodeReplKernel>(launch("javascript", "/nonexistent/dir"),
                                             KernelServices{io_.get_executor(), &registry_});
  EXPECT_THROW(run([this]() -> net::awaitable<void> { co_await kernel_->start(); }), KernelError);
  kernel_.reset();
}

}  // namespace
}  // namespace cove::interpreter
