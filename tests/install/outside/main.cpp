// Built against an installed coral: two actors pass numbers through a channel.
#include <cstdio>

#include <coral/channels/channel.hpp>
#include <coral/core/runtime.hpp>

int main() {
  coral::runtime rt({.mode = coral::executor_mode::single});
  coral::channel<int> ch(8);
  int sum = 0;
  auto ex = rt.pool("main");
  rt.spawn("producer", ex, [&]() -> asio::awaitable<void> {
    for (int i = 1; i <= 10; ++i) (void)co_await ch.async_send(i);
    ch.close();
  });
  rt.spawn("consumer", ex, [&]() -> asio::awaitable<void> {
    while (auto v = co_await ch.async_receive()) sum += *v;
  });
  rt.run();
  std::printf("sum=%d\n", sum);
  return sum == 55 ? 0 : 1;
}
