// Filter entries, read through the loader so that errors carry their full YAML path.
#include <gtest/gtest.h>

#include "filters/aimd/aimd.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// kMinimal with a filter list; the first filter line is line 9.
std::string with_filters(std::string_view filters) {
  return std::string(kMinimal) + "    filters:\n" + std::string(filters);
}

std::vector<FilterConfig> load_filters(std::string_view filters) {
  return load_config_string(with_filters(filters), "t.yaml", builtin_filters())
      .listeners.at(0)
      .filters;
}

TEST(FilterConfigReader, FixedSemaphoreDefaults) {
  const auto filters = load_filters("      - {type: fixed_semaphore, max_concurrency: 8}\n");
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_EQ(filters[0].name, "fixed_semaphore");
  EXPECT_EQ(filters[0].type, "fixed_semaphore");
  const auto c = params_as<FixedSemaphoreConfig>(filters[0]);
  EXPECT_EQ(c.max_concurrency, 8u);
  EXPECT_EQ(c.max_queue, 1000u);
  EXPECT_EQ(c.queue_order, QueueOrder::Fifo);
  EXPECT_FALSE(c.retry_pushback.has_value());
}

TEST(FilterConfigReader, FixedSemaphoreEveryField) {
  const auto filters = load_filters(R"(      - type: fixed_semaphore
        name: sem
        max_concurrency: 2
        max_queue: 0
        queue_order: lifo
        retry_pushback: 250ms
)");
  EXPECT_EQ(filters[0].name, "sem");
  const auto c = params_as<FixedSemaphoreConfig>(filters[0]);
  EXPECT_EQ(c.max_concurrency, 2u);
  EXPECT_EQ(c.max_queue, 0u);
  EXPECT_EQ(c.queue_order, QueueOrder::Lifo);
  EXPECT_EQ(c.retry_pushback, milliseconds(250));
}

TEST(FilterConfigReader, QueueWaitBudgetFields) {
  const auto filters = load_filters(
      "      - {type: queue_wait_budget, budget: 8ms}\n"
      "      - {type: queue_wait_budget, name: b2, budget: 1.5s, retry_pushback: 1s}\n");
  const auto& a = params_as<QueueWaitBudgetConfig>(filters[0]);
  EXPECT_EQ(a.budget, milliseconds(8));
  EXPECT_FALSE(a.retry_pushback.has_value());
  const auto& b = params_as<QueueWaitBudgetConfig>(filters[1]);
  EXPECT_EQ(b.budget, milliseconds(1500));
  EXPECT_EQ(b.retry_pushback, seconds(1));
}

TEST(FilterConfigReader, QueueWaitBudgetPerClass) {
  const auto c = params_as<QueueWaitBudgetConfig>(load_filters(R"(      - type: queue_wait_budget
        budget: 20ms
        budgets: {sheddable: 2ms, critical_plus: 200ms}
)")[0]);
  EXPECT_EQ(c.budget, milliseconds(20));
  EXPECT_EQ(c.budgets[index_of(Criticality::Sheddable)], milliseconds(2));
  EXPECT_FALSE(c.budgets[index_of(Criticality::SheddablePlus)].has_value());
  EXPECT_FALSE(c.budgets[index_of(Criticality::Critical)].has_value());
  EXPECT_EQ(c.budgets[index_of(Criticality::CriticalPlus)], milliseconds(200));
}

TEST(FilterConfigReader, StreamsRulesChooseHowLongAPermitIsHeld) {
  const auto filters = load_filters(R"(      - type: rtt_gradient
        streams:
          - {match: /chat.Room/Join, permit: none}
          - {match: "/chat.Room/*", permit: first_message}
      - type: fixed_semaphore
        max_concurrency: 4
        streams: [{match: /a.B/C, permit: end}]
)");
  const auto& rtt = params_as<RttGradientConfig>(filters[0]);
  ASSERT_EQ(rtt.streams.size(), 2u);
  EXPECT_EQ(rtt.hold_for("/chat.Room/Join"), PermitHold::None);
  EXPECT_EQ(rtt.hold_for("/chat.Room/Watch"), PermitHold::FirstMessage);
  EXPECT_EQ(rtt.hold_for("/chat.Lobby/List"), PermitHold::End) << "no match: held to the end";
  const auto& sem = params_as<FixedSemaphoreConfig>(filters[1]);
  EXPECT_EQ(sem.hold_for("/a.B/C"), PermitHold::End);
  EXPECT_TRUE(params_as<RttGradientConfig>(load_filters("      - type: rtt_gradient\n")[0])
                  .streams.empty());
}

TEST(FilterConfigReader, RttGradientDefaults) {
  const auto c = params_as<RttGradientConfig>(load_filters("      - type: rtt_gradient\n")[0]);
  EXPECT_EQ(c.initial_limit, 20u);
  EXPECT_EQ(c.min_limit, 1u);
  EXPECT_EQ(c.max_limit, 1000u);
  EXPECT_DOUBLE_EQ(c.tolerance, 0.85);
  EXPECT_EQ(c.delay_tolerance, milliseconds(1));
  EXPECT_DOUBLE_EQ(c.smoothing, 0.2);
  EXPECT_FALSE(c.queue_allowance.has_value());
  EXPECT_EQ(c.update_interval, milliseconds(50));
  EXPECT_EQ(c.noload_window, seconds(30));
  EXPECT_EQ(c.max_queue, 1000u);
  EXPECT_EQ(c.queue_order, QueueOrder::Fifo);
  EXPECT_FALSE(c.retry_pushback.has_value());
}

TEST(FilterConfigReader, RttGradientEveryField) {
  const auto c = params_as<RttGradientConfig>(load_filters(R"(      - type: rtt_gradient
        initial_limit: 5
        min_limit: 5
        max_limit: 5
        tolerance: 1
        delay_tolerance: 0s
        smoothing: 0.5
        queue_allowance: 0
        update_interval: 100ms
        noload_window: 1m
        max_queue: 10
        queue_order: lifo
        retry_pushback: 5ms
)")[0]);
  EXPECT_EQ(c.initial_limit, 5u);
  EXPECT_EQ(c.min_limit, 5u);
  EXPECT_EQ(c.max_limit, 5u);
  EXPECT_DOUBLE_EQ(c.tolerance, 1.0);
  EXPECT_EQ(c.delay_tolerance, Duration::zero());
  EXPECT_DOUBLE_EQ(c.smoothing, 0.5);
  EXPECT_EQ(c.queue_allowance, 0.0);
  EXPECT_EQ(c.update_interval, milliseconds(100));
  EXPECT_EQ(c.noload_window, seconds(60));
  EXPECT_EQ(c.max_queue, 10u);
  EXPECT_EQ(c.queue_order, QueueOrder::Lifo);
  EXPECT_EQ(c.retry_pushback, milliseconds(5));
}

TEST(FilterConfigReader, AimdDefaults) {
  const auto c =
      params_as<AimdConfig>(load_filters("      - {type: aimd, latency_slo: 50ms}\n")[0]);
  EXPECT_EQ(c.latency_slo, milliseconds(50));
  EXPECT_EQ(c.initial_limit, 10u);
  EXPECT_EQ(c.min_limit, 1u);
  EXPECT_EQ(c.max_limit, 1000u);
  EXPECT_DOUBLE_EQ(c.increase, 1.0);
  EXPECT_DOUBLE_EQ(c.backoff, 0.7);
  EXPECT_DOUBLE_EQ(c.p99_headroom, 0.8);
  EXPECT_DOUBLE_EQ(c.fast_decrease_multiplier, 3.0);
  EXPECT_EQ(c.interval, seconds(1));
  EXPECT_EQ(c.window, seconds(10));
  EXPECT_EQ(c.max_queue, 1000u);
  EXPECT_EQ(c.queue_order, QueueOrder::Fifo);
  EXPECT_FALSE(c.retry_pushback.has_value());
}

TEST(FilterConfigReader, AimdEveryField) {
  const auto c = params_as<AimdConfig>(load_filters(R"(      - type: aimd
        latency_slo: 200ms
        initial_limit: 4
        min_limit: 2
        max_limit: 64
        increase: 2.5
        backoff: 0.5
        p99_headroom: 1
        fast_decrease_multiplier: 1.5
        interval: 500ms
        window: 5s
        max_queue: 3
        queue_order: lifo
        retry_pushback: 100ms
)")[0]);
  EXPECT_EQ(c.latency_slo, milliseconds(200));
  EXPECT_EQ(c.initial_limit, 4u);
  EXPECT_EQ(c.min_limit, 2u);
  EXPECT_EQ(c.max_limit, 64u);
  EXPECT_DOUBLE_EQ(c.increase, 2.5);
  EXPECT_DOUBLE_EQ(c.backoff, 0.5);
  EXPECT_DOUBLE_EQ(c.p99_headroom, 1.0);
  EXPECT_DOUBLE_EQ(c.fast_decrease_multiplier, 1.5);
  EXPECT_EQ(c.interval, milliseconds(500));
  EXPECT_EQ(c.window, seconds(5));
  EXPECT_EQ(c.max_queue, 3u);
  EXPECT_EQ(c.queue_order, QueueOrder::Lifo);
  EXPECT_EQ(c.retry_pushback, milliseconds(100));
}

TEST(FilterConfigReader, NameDefaultsToTheTypeWithTheIndexWhenTheTypeRepeats) {
  const auto filters = load_filters(R"(      - {type: queue_wait_budget, budget: 8ms}
      - {type: fixed_semaphore, max_concurrency: 2}
      - {type: fixed_semaphore, max_concurrency: 4}
      - {type: fixed_semaphore, name: third, max_concurrency: 4}
)");
  ASSERT_EQ(filters.size(), 4u);
  EXPECT_EQ(filters[0].name, "queue_wait_budget");
  EXPECT_EQ(filters[1].name, "fixed_semaphore_1");
  EXPECT_EQ(filters[2].name, "fixed_semaphore_2");
  EXPECT_EQ(filters[3].name, "third");
}

TEST(FilterConfigReader, FiltersKeepTheirOrder) {
  const auto filters = load_filters(R"(      - {type: aimd, latency_slo: 1s}
      - {type: rtt_gradient}
      - {type: queue_wait_budget, budget: 8ms}
      - {type: fixed_semaphore, max_concurrency: 1}
)");
  ASSERT_EQ(filters.size(), 4u);
  EXPECT_EQ(filters[0].type, "aimd");
  EXPECT_EQ(filters[1].type, "rtt_gradient");
  EXPECT_EQ(filters[2].type, "queue_wait_budget");
  EXPECT_EQ(filters[3].type, "fixed_semaphore");
}

// --- errors ---

TEST(FilterConfigReader, TheBriefsExampleErrorReadsAsDocumented) {
  const auto e = load_error(with_filters(R"(      - {type: queue_wait_budget, budget: 8ms}
      - type: fixed_semaphore
        max_concurrency: abc
)"));
  ASSERT_TRUE(e);
  EXPECT_STREQ(e->what(),
               "test.yaml:11:26: at listeners[0].filters[1].max_concurrency: must be an integer "
               ">= 1, got \"abc\"");
}

TEST(FilterConfigReader, TypeIsRequired) {
  EXPECT_TRUE(FailsAt(with_filters("      - {max_concurrency: 2}\n"), 9, 9,
                      "listeners[0].filters[0].type", "is required"));
}

TEST(FilterConfigReader, UnknownTypeListsTheKnownOnes) {
  EXPECT_TRUE(FailsAt(with_filters("      - type: token_bucket\n"), 9, 15,
                      "listeners[0].filters[0].type",
                      "must be one of fixed_semaphore|queue_wait_budget|rtt_gradient|aimd, got "
                      "\"token_bucket\""));
}

TEST(FilterConfigReader, EntryMustBeAMap) {
  EXPECT_TRUE(FailsAt(with_filters("      - fixed_semaphore\n"), 9, 9, "listeners[0].filters[0]",
                      "must be a map, got \"fixed_semaphore\""));
  EXPECT_TRUE(FailsAt(with_filters("      -\n"), 9, 7, "listeners[0].filters[0]",
                      "must be a map with a type, got nothing"));
}

TEST(FilterConfigReader, UnknownKeysListTheKeysOfThatType) {
  EXPECT_TRUE(FailsAt(
      with_filters("      - type: fixed_semaphore\n        max_concurency: 2\n"), 10, 9,
      "listeners[0].filters[0].max_concurency",
      "unknown key \"max_concurency\" (did you mean \"max_concurrency\"?); allowed "
      "keys: type, name, max_concurrency, max_queue, queue_order, retry_pushback, streams"));
  EXPECT_TRUE(FailsAt(with_filters("      - {type: queue_wait_budget, budget: 1s, max_queue: 1}\n"),
                      9, 47, "listeners[0].filters[0].max_queue",
                      "allowed keys: type, name, budget, budgets, retry_pushback"));
  EXPECT_TRUE(FailsAt(
      with_filters("      - {type: rtt_gradient, latency_slo: 1s}\n"), 9, 30,
      "listeners[0].filters[0].latency_slo",
      "allowed keys: type, name, initial_limit, min_limit, max_limit, tolerance, "
      "delay_tolerance, smoothing, queue_allowance, update_interval, noload_window, min_samples, "
      "max_queue, queue_order, retry_pushback, streams"));
  EXPECT_TRUE(FailsAt(with_filters("      - {type: aimd, latency_slo: 1s, tolerance: 0.5}\n"), 9,
                      39, "listeners[0].filters[0].tolerance",
                      "allowed keys: type, name, latency_slo, initial_limit, min_limit, max_limit, "
                      "increase, backoff, p99_headroom, fast_decrease_multiplier, interval, "
                      "window, min_samples, noload_window, max_queue, queue_order, "
                      "retry_pushback, streams"));
}

TEST(FilterConfigReader, RequiredParameters) {
  EXPECT_TRUE(FailsAt(with_filters("      - type: fixed_semaphore\n"), 9, 9,
                      "listeners[0].filters[0].max_concurrency", "is required"));
  EXPECT_TRUE(FailsAt(with_filters("      - type: queue_wait_budget\n"), 9, 9,
                      "listeners[0].filters[0].budget", "is required"));
  EXPECT_TRUE(FailsAt(with_filters("      - type: aimd\n"), 9, 9,
                      "listeners[0].filters[0].latency_slo", "is required"));
}

TEST(FilterConfigReader, MaxConcurrencyMustBePositive) {
  EXPECT_TRUE(FailsAt(with_filters("      - {type: fixed_semaphore, max_concurrency: 0}\n"), 9, 50,
                      "listeners[0].filters[0].max_concurrency",
                      "must be an integer >= 1, got \"0\""));
}

TEST(FilterConfigReader, BudgetAndSloMustBePositive) {
  EXPECT_TRUE(FailsAt(with_filters("      - {type: queue_wait_budget, budget: 0ms}\n"), 9, 43,
                      "listeners[0].filters[0].budget", "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_filters("      - {type: queue_wait_budget, budget: 8}\n"), 9, 43,
                      "listeners[0].filters[0].budget", "with a unit"));
  EXPECT_TRUE(FailsAt(with_filters("      - {type: aimd, latency_slo: 0s}\n"), 9, 35,
                      "listeners[0].filters[0].latency_slo", "must be a duration > 0"));
}

TEST(FilterConfigReader, RetryPushbackMustBePositive) {
  EXPECT_TRUE(
      FailsAt(with_filters("      - {type: queue_wait_budget, budget: 8ms, retry_pushback: 0s}\n"),
              9, 64, "listeners[0].filters[0].retry_pushback", "must be a duration > 0"));
}

TEST(FilterConfigReader, QueueOrderIsFifoOrLifo) {
  EXPECT_TRUE(FailsAt(
      with_filters("      - {type: fixed_semaphore, max_concurrency: 1, queue_order: random}\n"), 9,
      66, "listeners[0].filters[0].queue_order",
      "must be one of fifo|lifo|adaptive_lifo, got \"random\""));
}

TEST(FilterConfigReader, BudgetsNameClassesAndTakeDurations) {
  EXPECT_TRUE(
      FailsAt(with_filters("      - {type: queue_wait_budget, budget: 8ms, budgets: {low: 1ms}}\n"),
              9, 58, "listeners[0].filters[0].budgets.low",
              "allowed keys: sheddable, sheddable_plus, critical, critical_plus"));
  EXPECT_TRUE(FailsAt(
      with_filters("      - {type: queue_wait_budget, budget: 8ms, budgets: {sheddable: 0s}}\n"), 9,
      69, "listeners[0].filters[0].budgets.sheddable", "must be a duration > 0"));
  EXPECT_TRUE(
      FailsAt(with_filters("      - {type: queue_wait_budget, budget: 8ms, budgets: [1ms]}\n"), 9,
              57, "listeners[0].filters[0].budgets", "must be a map"));
}

TEST(FilterConfigReader, StreamsRulesAreChecked) {
  EXPECT_TRUE(FailsAt(
      with_filters("      - {type: rtt_gradient, streams: [{match: /a.B/C, permit: half}]}\n"), 9,
      64, "listeners[0].filters[0].streams[0].permit",
      "must be one of end|first_message|none, got \"half\""));
  EXPECT_TRUE(FailsAt(
      with_filters("      - {type: rtt_gradient, streams: [{match: \"*\", permit: none}]}\n"), 9,
      48, "listeners[0].filters[0].streams[0].match", "a prefix ending in '*'"));
  EXPECT_TRUE(FailsAt(with_filters("      - {type: rtt_gradient, streams: [{permit: none}]}\n"), 9,
                      40, "listeners[0].filters[0].streams[0].match", "is required"));
  EXPECT_TRUE(FailsAt(
      with_filters(
          "      - {type: aimd, latency_slo: 1s, streams: [{match: /a.B/C, hold: none}]}\n"),
      9, 65, "listeners[0].filters[0].streams[0].hold", "allowed keys: match, permit"));
}

std::string rtt(std::string_view params) {
  return with_filters("      - {type: rtt_gradient, " + std::string(params) + "}\n");
}

TEST(FilterConfigReader, ToleranceAndSmoothingAreInZeroToOne) {
  EXPECT_TRUE(FailsAt(rtt("tolerance: 0"), 9, 41, "listeners[0].filters[0].tolerance",
                      "must be a number in (0, 1], got \"0\""));
  EXPECT_TRUE(FailsAt(rtt("tolerance: 1.01"), 9, 41, "listeners[0].filters[0].tolerance",
                      "must be a number in (0, 1]"));
  EXPECT_TRUE(FailsAt(rtt("delay_tolerance: 5"), 9, 47, "listeners[0].filters[0].delay_tolerance",
                      "must be a duration >= 0 with a unit"));
  EXPECT_TRUE(FailsAt(rtt("smoothing: 0"), 9, 41, "listeners[0].filters[0].smoothing",
                      "must be a number in (0, 1]"));
  EXPECT_TRUE(FailsAt(rtt("smoothing: x"), 9, 41, "listeners[0].filters[0].smoothing",
                      "must be a number in (0, 1], got \"x\""));
  EXPECT_TRUE(FailsAt(rtt("smoothing: .nan"), 9, 41, "listeners[0].filters[0].smoothing",
                      "must be a number in (0, 1]"));
}

TEST(FilterConfigReader, QueueAllowanceIsNonNegative) {
  EXPECT_TRUE(FailsAt(rtt("queue_allowance: -1"), 9, 47, "listeners[0].filters[0].queue_allowance",
                      "must be a number >= 0"));
}

TEST(FilterConfigReader, LimitsMustSatisfyMinInitialMax) {
  EXPECT_TRUE(FailsAt(rtt("min_limit: 0"), 9, 41, "listeners[0].filters[0].min_limit",
                      "must be an integer >= 1"));
  EXPECT_TRUE(FailsAt(rtt("min_limit: 10, max_limit: 5, initial_limit: 7"), 9, 56,
                      "listeners[0].filters[0].max_limit",
                      "limits must satisfy min_limit (10) <= initial_limit (7) <= max_limit (5)"));
  EXPECT_TRUE(FailsAt(rtt("initial_limit: 50, max_limit: 40"), 9, 45,
                      "listeners[0].filters[0].initial_limit", "initial_limit (50)"));
  // The default initial_limit (20) conflicts with what was written: point at what was written.
  EXPECT_TRUE(FailsAt(rtt("max_limit: 10"), 9, 41, "listeners[0].filters[0].max_limit",
                      "min_limit (1) <= initial_limit (20) <= max_limit (10)"));
  EXPECT_TRUE(FailsAt(rtt("min_limit: 30"), 9, 41, "listeners[0].filters[0].min_limit",
                      "initial_limit (20)"));
}

std::string aimd(std::string_view params) {
  return with_filters("      - {type: aimd, latency_slo: 10ms, " + std::string(params) + "}\n");
}

TEST(FilterConfigReader, AimdRanges) {
  EXPECT_TRUE(FailsAt(aimd("backoff: 1"), 9, 50, "listeners[0].filters[0].backoff",
                      "must be a number in (0, 1), got \"1\""));
  EXPECT_TRUE(FailsAt(aimd("backoff: 0"), 9, 50, "listeners[0].filters[0].backoff",
                      "must be a number in (0, 1)"));
  EXPECT_TRUE(FailsAt(aimd("p99_headroom: 0"), 9, 55, "listeners[0].filters[0].p99_headroom",
                      "must be a number in (0, 1]"));
  EXPECT_TRUE(FailsAt(aimd("fast_decrease_multiplier: 1"), 9, 67,
                      "listeners[0].filters[0].fast_decrease_multiplier",
                      "must be a number > 1, got \"1\""));
  EXPECT_TRUE(FailsAt(aimd("increase: 0"), 9, 51, "listeners[0].filters[0].increase",
                      "must be a number > 0"));
  EXPECT_TRUE(FailsAt(aimd("interval: 0s"), 9, 51, "listeners[0].filters[0].interval",
                      "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(aimd("min_limit: 5, initial_limit: 2"), 9, 70,
                      "listeners[0].filters[0].initial_limit",
                      "min_limit (5) <= initial_limit (2)"));
}

TEST(FilterConfigReader, FilterNamesMustBeUniqueWithinAListener) {
  EXPECT_TRUE(FailsAt(
      with_filters(R"(      - {type: fixed_semaphore, name: gate, max_concurrency: 1}
      - {type: queue_wait_budget, name: gate, budget: 1s}
)"),
      10, 41, "listeners[0].filters[1].name", "duplicate filter name \"gate\" (first at line 9)"));
}

TEST(FilterConfigReader, ADefaultNameCanCollideWithAnExplicitOne) {
  EXPECT_TRUE(FailsAt(with_filters(R"(      - {type: aimd, name: fixed_semaphore, latency_slo: 1s}
      - {type: fixed_semaphore, max_concurrency: 1}
)"),
                      10, 9, "listeners[0].filters[1]",
                      "duplicate filter name \"fixed_semaphore\""));
}

TEST(FilterConfigReader, SameFilterNamesInDifferentListenersAreFine) {
  const Config c = load_config_string(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: a, address: 0.0.0.0:80, cluster: app, filters: [{type: rtt_gradient}]}
  - {name: b, address: 0.0.0.0:81, cluster: app, filters: [{type: rtt_gradient}]}
)",
                                      "t", builtin_filters());
  EXPECT_EQ(c.listeners[0].filters[0].name, c.listeners[1].filters[0].name);
}

TEST(FilterConfigReader, FilterNamesAreStatFriendly) {
  EXPECT_TRUE(FailsAt(with_filters("      - {type: rtt_gradient, name: \"a b\"}\n"), 9, 36,
                      "listeners[0].filters[0].name", "must be a name of letters"));
}

TEST(FilterConfigReader, FiltersMustBeAList) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    filters: {type: aimd}\n", 8, 14,
                      "listeners[0].filters", "must be a list, got a map"));
}

}  // namespace
}  // namespace sluice
