// Everything a ProxyStream is given by the connection that creates it: its downstream port, the
// worker's upstreams (the stream picks its port when admitted, from its listener snapshot), the
// listener it belongs to and the event loop it runs on. Owned by the connection; outlives its
// streams.
#pragma once

#include "src/core/dispatcher.h"
#include "src/proxy/downstream_port.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

struct ConnectionSettings;
struct ListenerContext;

struct StreamContext {
  DownstreamPort& downstream;
  UpstreamDirectory& upstreams;
  ListenerContext& listener;
  // The HTTP/2 settings and limits of the stream's connection (as when it was accepted).
  const ConnectionSettings& connection;
  // Timers (the request's deadline) and the time every stream event is measured with.
  Dispatcher& dispatcher;
};

}  // namespace sluice
