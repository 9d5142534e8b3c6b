// The host channel's first bytes: `CONNECT <port>\n` (Firecracker hybrid vsock) or plain HTTP.
#include <gtest/gtest.h>

#include "net/host_channel.hpp"

using cove::netio::HandshakeParse;
using cove::netio::parse_handshake;

namespace {
struct Parsed {
  HandshakeParse kind;
  uint16_t port;
  size_t consumed;
};
Parsed parse(std::string_view bytes) {
  Parsed p{HandshakeParse::invalid, 0xBEEF, 9999};
  p.kind = parse_handshake(bytes, p.port, p.consumed);
  return p;
}
}  // namespace

TEST(Handshake, HttpRequestLine) {
  for (const char* req : {"GET / HTTP/1.1\r\n", "POST /init HTTP/1.1\r\nHost: x\r\n\r\n",
                          "PUT /files", "OPTIONS * HTTP/1.1\r\n", "G", "CONX", "connect 80\n",
                          "CONNECT80\n", "COPY /x HTTP/1.1\r\n"}) {
    EXPECT_EQ(parse(req).kind, HandshakeParse::http) << '"' << req << '"';
  }
}

TEST(Handshake, PrefixOfConnectNeedsMore) {
  for (const char* partial : {"", "C", "CO", "CONN", "CONNECT", "CONNECT ", "CONNECT 80", "CONNECT 8080\r"}) {
    EXPECT_EQ(parse(partial).kind, HandshakeParse::need_more) << '"' << partial << '"';
  }
}

TEST(Handshake, ConnectWithPort) {
  auto p = parse("CONNECT 8080\n");
  ASSERT_EQ(p.kind, HandshakeParse::connect);
  EXPECT_EQ(p.port, 8080);
  EXPECT_EQ(p.consumed, 13u);

  auto agent = parse("CONNECT 49983\n");
  ASSERT_EQ(agent.kind, HandshakeParse::connect);
  EXPECT_EQ(agent.port, 49983);

  auto low = parse("CONNECT 1\n");
  ASSERT_EQ(low.kind, HandshakeParse::connect);
  EXPECT_EQ(low.port, 1);
  EXPECT_EQ(low.consumed, 10u);

  auto high = parse("CONNECT 65535\n");
  ASSERT_EQ(high.kind, HandshakeParse::connect);
  EXPECT_EQ(high.port, 65535);
}

TEST(Handshake, CrLfTolerated) {
  auto p = parse("CONNECT 8080\r\n");
  ASSERT_EQ(p.kind, HandshakeParse::connect);
  EXPECT_EQ(p.port, 8080);
  EXPECT_EQ(p.consumed, 14u);
}

TEST(Handshake, BytesAfterTheLineAreNotConsumed) {
  const std::string wire = "CONNECT 3000\nGET / HTTP/1.1\r\n\r\n";
  auto p = parse(wire);
  ASSERT_EQ(p.kind, HandshakeParse::connect);
  EXPECT_EQ(p.port, 3000);
  EXPECT_EQ(wire.substr(p.consumed), "GET / HTTP/1.1\r\n\r\n");
}

TEST(Handshake, InvalidPorts) {
  for (const char* bad : {"CONNECT 0\n", "CONNECT 70000\n", "CONNECT 65536\n", "CONNECT 99999999999\n",
                          "CONNECT abc\n", "CONNECT \n", "CONNECT -1\n", "CONNECT +80\n", "CONNECT 80 \n",
                          "CONNECT  80\n", "CONNECT 8o\n", "CONNECT 80\r\r\n", "CONNECT 0x50\n"}) {
    EXPECT_EQ(parse(bad).kind, HandshakeParse::invalid) << '"' << bad << '"';
  }
}

TEST(Handshake, OverlyLongLineIsInvalid) {
  EXPECT_EQ(parse("CONNECT " + std::string(64, '1')).kind, HandshakeParse::invalid);
  EXPECT_EQ(parse("CONNECT " + std::string(200, ' ')).kind, HandshakeParse::invalid);
  // Without a newline it is not a stall forever: a long unterminated line is refused.
  EXPECT_EQ(parse("CONNECT 8080" + std::string(40, ' ')).kind, HandshakeParse::invalid);
}
