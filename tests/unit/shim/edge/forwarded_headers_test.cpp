#include <gtest/gtest.h>

#include "edge/forwarded_headers.hpp"

namespace cove::shim::edge {

TEST(ForwardedHeaders, HopByHop) {
  for (const char* h : {"Connection", "keep-alive", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
                        "Proxy-Authorization", "proxy-connection", "Proxy-Foo"}) {
    EXPECT_TRUE(is_hop_by_hop(h)) << h;
  }
  for (const char* h : {"Host", "Content-Length", "E2b-Sandbox-Id", "X-Access-Token", "Trailers", "Proxy"}) {
    EXPECT_FALSE(is_hop_by_hop(h)) << h;
  }
}

TEST(ForwardedHeaders, ConnectionListedHeadersAreDropped) {
  Fields in;
  in.insert("Host", "localhost:3001");
  in.insert("Connection", "keep-alive, X-Drop");
  in.insert("X-Drop", "1");
  in.insert("X-Keep", "2");
  in.insert("Set-Cookie", "a=1");
  in.insert("Set-Cookie", "b=2");
  Fields out = end_to_end_headers(in);
  EXPECT_EQ(out.count("X-Drop"), 0u);
  EXPECT_EQ(out.count("Connection"), 0u);
  EXPECT_EQ(out["X-Keep"], "2");
  EXPECT_EQ(out["Host"], "localhost:3001");
  EXPECT_EQ(out.count("Set-Cookie"), 2u);
}

TEST(ForwardedHeaders, UpstreamHeadFraming) {
  Fields in;
  in.insert("Host", "localhost:3001");
  in.insert("Content-Length", "5");
  in.insert("Expect", "100-continue");
  in.insert("Keep-Alive", "timeout=5");
  EXPECT_EQ(upstream_request_head("POST", "/a?b", in, BodyFraming::sized),
            "POST /a?b HTTP/1.1\r\nHost: localhost:3001\r\nContent-Length: 5\r\nConnection: close\r\n\r\n");
  Fields chunked;
  chunked.insert("Host", "h");
  chunked.insert("Transfer-Encoding", "chunked");
  EXPECT_EQ(upstream_request_head("POST", "/", chunked, BodyFraming::chunked),
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  // The traffic token stops at the edge, in any spelling.
  Fields guarded;
  guarded.insert("Host", "h");
  guarded.insert("E2B-Traffic-Access-Token", "secret");
  guarded.insert("X-Keep", "1");
  EXPECT_EQ(upstream_request_head("GET", "/", guarded, BodyFraming::none),
            "GET / HTTP/1.1\r\nHost: h\r\nX-Keep: 1\r\nConnection: close\r\n\r\n");
}

}  // namespace cove::shim::edge
