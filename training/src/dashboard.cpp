#include "coral/training/dashboard.hpp"

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "dashboard_assets.hpp"

namespace coral::training {
namespace {

http_server_options server_options(const dashboard_options& o) {
  http_server_options s;
  s.bind = o.bind;
  s.port = o.port;
  return s;
}

}  // namespace

void dashboard::check(const dashboard_options& options) { http_server::check(server_options(options)); }

dashboard::dashboard(const dashboard_options& options)
    : server_(std::make_unique<http_server>(server_options(options),
                                            [this](std::string_view path) { return answer(path); })) {}

dashboard::~dashboard() { stop(); }

std::string dashboard::url() const {
  const auto& host = server_->bind();
  // An IPv6 address goes in brackets in a URL.
  return fmt::format("http://{}:{}/", host.find(':') != std::string::npos ? "[" + host + "]" : host, port());
}

void dashboard::start(live_source source) {
  if (view_) throw usage_error("dashboard::start() called twice");
  view_ = std::make_unique<live_view>(std::move(source));
  server_->every_period(sample_period, [this] { view_->sample(); });
  server_->every_period(window_period, [this] { view_->tick(); });
  server_->start();
}

void dashboard::stop() { server_->stop(); }

http_response dashboard::answer(std::string_view path) const {
  http_response r;
  if (path == "/" || path == "/index.html") {
    r.content_type = "text/html; charset=utf-8";
    r.static_body = assets::page;
  } else if (path == "/dygraph.min.js") {
    r.content_type = "text/javascript; charset=utf-8";
    r.static_body = assets::dygraphs_js;
  } else if (path == "/dygraph.min.css") {
    r.content_type = "text/css; charset=utf-8";
    r.static_body = assets::dygraphs_css;
  } else if (path == "/state.json") {
    r.content_type = "application/json";
    r.body = view_->state_json();
  } else if (path == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = view_->prometheus();
  } else {
    r.status = 404;
    r.body = "not found: / (the page), /state.json, /metrics\n";
  }
  return r;
}

}  // namespace coral::training
