// The queue-mode points of a history sample (README "/history": "queues", "consumers"), from
// what QueueModeState read; HistorySampler calls these once per sample. Each also leaves in the
// round what /queues shows over the recent window: the end-to-end and consumer call-time
// histograms (recent_histograms, by dotted name) and Redis's CPU (recent_rates, by
// redis_cpu_key).
#pragma once

#include <cstddef>
#include <string>

#include "src/admin/history_round.h"
#include "src/admin/history_sample.h"
#include "src/admin/queue_mode_state.h"

namespace sluice {

// `recent_intervals`: the window /queues' recent values span (HistoryOptions).
void fill_queue_point(HistoryQueuePoint& p, HistoryRound& round, const QueueModeState::Queue& q,
                      std::size_t recent_intervals);
void fill_consumer_point(HistoryConsumerPoint& p, HistoryRound& round,
                         const QueueModeState::Consumer& c, std::size_t recent_intervals);

// The key of a queue's Redis CPU ratio in HistoryRound::recent_rates.
std::string redis_cpu_key(const std::string& queue);

}  // namespace sluice
