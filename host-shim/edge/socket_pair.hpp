#pragma once
// A connected pair of in-process stream sockets. The edge terminates TLS (and HTTP/2) and hands
// each plaintext HTTP/1.1 conversation to the same handlers the plain listeners run, through one
// end of a pair; the other end is the edge's.
#include <boost/asio/any_io_executor.hpp>

#include <utility>

#include "http/exchange.hpp"

namespace cove::shim::edge {

// Throws std::system_error when the process is out of descriptors.
std::pair<http::Socket, http::Socket> make_socket_pair(const boost::asio::any_io_executor& executor);

}  // namespace cove::shim::edge
