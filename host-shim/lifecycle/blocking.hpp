#pragma once
// Runs blocking work (the runtime's start/destroy, cgroup reads) on the worker pool and resumes
// the awaiting coroutine on its own executor, so the io thread never blocks. Written as a plain
// async operation, not a capturing coroutine lambda. Callers pass a named lambda: GCC 12 destroys
// a temporary closure inside a co_await operand twice.
#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <type_traits>
#include <utility>

namespace cove::shim {

template <typename F>
boost::asio::awaitable<std::invoke_result_t<F>> run_blocking(boost::asio::thread_pool& pool, F fn) {
  namespace net = boost::asio;
  using R = std::invoke_result_t<F>;
  if constexpr (std::is_void_v<R>) {
    auto initiation = [&pool](auto handler, F work) {
      auto home = net::get_associated_executor(handler);
      net::post(pool, [work = std::move(work), handler = std::move(handler), home]() mutable {
        std::exception_ptr error;
        try {
          work();
        } catch (...) {
          error = std::current_exception();
        }
        net::post(home, [handler = std::move(handler), error]() mutable { handler(error); });
      });
    };
    co_await net::async_initiate<decltype(net::use_awaitable), void(std::exception_ptr)>(
        std::move(initiation), net::use_awaitable, std::move(fn));
  } else {
    auto initiation = [&pool](auto handler, F work) {
      auto home = net::get_associated_executor(handler);
      net::post(pool, [work = std::move(work), handler = std::move(handler), home]() mutable {
        std::exception_ptr error;
        R result{};
        try {
          result = work();
        } catch (...) {
          error = std::current_exception();
        }
        net::post(home, [handler = std::move(handler), error, result = std::move(result)]() mutable {
          handler(error, std::move(result));
        });
      });
    };
    co_return co_await net::async_initiate<decltype(net::use_awaitable), void(std::exception_ptr, R)>(
        std::move(initiation), net::use_awaitable, std::move(fn));
  }
}

}  // namespace cove::shim
