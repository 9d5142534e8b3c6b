#include "files/http_date.hpp"

#include <array>
#include <cstdio>

namespace cove::files {
namespace {

constexpr std::array<std::string_view, 7> kDays{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongDays{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool literal(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit) return false;
    s_.remove_prefix(lit.size());
    return true;
  }
  // Exactly `width` digits (width 0: one or more, as asctime's day allows a leading space).
  bool number(int width, int& out) {
    int n = 0;
    size_t i = 0;
    while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9' && (width == 0 || static_cast<int>(i) < width)) {
      n = n * 10 + (s_[i] - '0');
      ++i;
    }
    if (i == 0 || (width != 0 && static_cast<int>(i) != width)) return false;
    s_.remove_prefix(i);
    out = n;
    return true;
  }
  bool month(int& out) {
    for (size_t k = 0; k < kMonths.size(); ++k) {
      if (literal(kMonths[k])) {
        out = static_cast<int>(k) + 1;
        return true;
      }
    }
    return false;
  }
  template <size_t N>
  bool one_of(const std::array<std::string_view, N>& names) {
    for (auto n : names) {
      if (literal(n)) return true;
    }
    return false;
  }
  bool done() const { return s_.empty(); }

 private:
  std::string_view s_;
};

std::optional<std::time_t> make_time(int year, int mon, int day, int h, int m, int s) {
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || m > 59 || s > 60) return std::nullopt;
  long long days = days_from_civil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day));
  return static_cast<std::time_t>(days * 86400 + h * 3600 + m * 60 + s);
}

}  // namespace

std::string format_http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[static_cast<size_t>(tm.tm_wday)].data(),
                tm.tm_mday, kMonths[static_cast<size_t>(tm.tm_mon)].data(), tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::optional<std::time_t> parse_http_date(std::string_view s) {
  int year = 0, mon = 0, day = 0, h = 0, m = 0, sec = 0;
  {  // Mon, 02 Jan 2006 15:04:05 GMT
    Cursor c(s);
    if (c.one_of(kDays) && c.literal(", ") && c.number(2, day) && c.literal(" ") && c.month(mon) && c.literal(" ") &&
        c.number(4, year) && c.literal(" ") && c.number(2, h) && c.literal(":") && c.number(2, m) && c.literal(":") &&
        c.number(2, sec) && c.literal(" GMT") && c.done()) {
      return make_time(year, mon, day, h, m, sec);
    }
  }
  {  // Monday, 02-Jan-06 15:04:05 GMT
    Cursor c(s);
    if (c.one_of(kLongDays) && c.literal(", ") && c.number(2, day) && c.literal("-") && c.month(mon) && c.literal("-") &&
        c.number(2, year) && c.literal(" ") && c.number(2, h) && c.literal(":") && c.number(2, m) && c.literal(":") &&
        c.number(2, sec) && c.literal(" GMT") && c.done()) {
      year += year < 69 ? 2000 : 1900;  // Go's two-digit year rule
      return make_time(year, mon, day, h, m, sec);
    }
  }
  {  // Mon Jan _2 15:04:05 2006
    Cursor c(s);
    if (c.one_of(kDays) && c.literal(" ") && c.month(mon) && c.literal(" ") && (c.literal(" ") || true) &&
        c.number(0, day) && day <= 31 && c.literal(" ") && c.number(2, h) && c.literal(":") && c.number(2, m) &&
        c.literal(":") && c.number(2, sec) && c.literal(" ") && c.number(4, year) && c.done()) {
      return make_time(year, mon, day, h, m, sec);
    }
  }
  return std::nullopt;
}

}  // namespace cove::files
