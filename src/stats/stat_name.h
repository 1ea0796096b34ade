// The identity of one stat: a kind ("listener"), labels ({listener: ingress}) and a leaf
// ("downstream_rq_total"). Gives the dotted name used by /stats ("listener.ingress.
// downstream_rq_total") and the Prometheus name plus labels ("sluice_listener_downstream_rq_
// total{listener="ingress"}"). Stat names are an API: see README "Stats".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sluice {

struct StatName {
  std::string kind;  // "server", "listener", "cluster", "filter", "worker"
  std::vector<std::pair<std::string, std::string>> labels;  // in name order
  std::string leaf;

  // kind + "." + label values joined by "." + "." + leaf.
  std::string dotted() const;
  // "sluice_" + kind + "_" + leaf, with any character outside [a-zA-Z0-9_] replaced by '_'.
  std::string prometheus_name() const;
  // {k="v",...} with Prometheus escaping, or "" when there are no labels.
  std::string prometheus_labels() const;
};

}  // namespace sluice
