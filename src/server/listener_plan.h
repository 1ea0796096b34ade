// What a reload will do to one listener of the new configuration, built by the step of apply()
// that may throw (Server::plan_listeners) and carried out by the one that may not
// (Server::commit_listeners).
#pragma once

#include <memory>
#include <optional>

#include "filters/chain_rebuild.h"
#include "src/config/config.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/tls_context.h"
#include "src/server/listener_set.h"

namespace sluice {

struct ListenerPlan {
  const ListenerConfig* config = nullptr;    // in the new configuration
  std::shared_ptr<ListenerContext> running;  // nullptr: added
  std::optional<ChainRebuild> rebuild;       // a kept listener whose filters change
  std::shared_ptr<const FilterChain> chain;  // otherwise its chain (new, or unchanged)
  std::shared_ptr<const ConnectionSettings> connection;
  std::optional<ServerTlsFiles> tls_files;  // the bytes of a new TLS context
  std::optional<ListenerSet::Bound> bound;  // added or moved: bound, not accepting yet
};

}  // namespace sluice
