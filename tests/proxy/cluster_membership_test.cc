// ClusterMembership with time and I/O faked: a resolver and health probers that answer only when
// the test says, and a FakeClock for dns_refresh, retries and check intervals.
#include "src/proxy/cluster_membership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "src/proxy/cluster_stats.h"
#include "src/stats/stats_registry.h"
#include "tests/fakes/fake_dispatcher.h"
#include "tests/proxy/endpoint.h"

namespace sluice {
namespace {

using boost::asio::ip::make_address;
using std::chrono::milliseconds;
using std::chrono::seconds;
using tcp = boost::asio::ip::tcp;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;

class FakeResolver final : public NameResolver {
 public:
  struct Lookup {
    std::string host;
    uint16_t port;
    Callback done;
  };
  void resolve(const std::string& host, uint16_t port, Callback done) override {
    lookups.push_back({host, port, std::move(done)});
  }
  // Answers the oldest lookup.
  void answer(std::vector<tcp::endpoint> addresses) { answer_with({std::move(addresses), ""}); }
  void fail(std::string error) { answer_with({{}, std::move(error)}); }
  void answer_with(NameResolver::Result r) {
    ASSERT_FALSE(lookups.empty()) << "no lookup pending";
    Lookup l = std::move(lookups.front());
    lookups.pop_front();
    l.done(std::move(r));
  }
  std::deque<Lookup> lookups;
};

// Probers whose checks wait until the test answers them; destroying one forgets its check, as
// the contract says.
class FakeProbers {
 public:
  struct Check {
    tcp::endpoint address;
    std::string service;
    HealthProber::Callback done;
    std::shared_ptr<bool> alive;  // false once its prober is gone
  };
  class Prober final : public HealthProber {
   public:
    Prober(FakeProbers& owner, EndpointAddress a, std::string service)
        : owner_(owner), address_(std::move(a)), service_(std::move(service)) {}
    ~Prober() override { *alive_ = false; }
    void check(Callback done) override {
      owner_.checks.push_back({address_.address, service_, std::move(done), alive_});
    }

   private:
    FakeProbers& owner_;
    EndpointAddress address_;
    std::string service_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  };

  HealthProberFactory factory() {
    return [this](const EndpointAddress& a, std::shared_ptr<const UpstreamSettings> settings,
                  const HealthCheckConfig& hc) -> std::unique_ptr<HealthProber> {
      ++made;
      last_settings = std::move(settings);
      return std::make_unique<Prober>(*this, a, hc.service);
    };
  }
  // Checks still owed an answer by a live prober, for `address`.
  std::size_t pending(const tcp::endpoint& address) {
    drop_dead();
    return static_cast<std::size_t>(std::count_if(
        checks.begin(), checks.end(), [&](const Check& c) { return c.address == address; }));
  }
  // Answers the oldest live check of `address`.
  void answer(const tcp::endpoint& address, bool serving, std::string detail = "NOT_SERVING") {
    drop_dead();
    auto it = std::find_if(checks.begin(), checks.end(),
                           [&](const Check& c) { return c.address == address; });
    ASSERT_NE(it, checks.end()) << "no check pending for " << address;
    Check c = std::move(*it);
    checks.erase(it);
    c.done(HealthCheckOutcome{serving, serving ? "" : std::move(detail)});
  }

  std::deque<Check> checks;
  int made = 0;
  std::shared_ptr<const UpstreamSettings> last_settings;

 private:
  void drop_dead() {
    // A destroyed prober's pending check is never answered: forget it.
    std::erase_if(checks, [](const Check& c) { return !*c.alive; });
  }
};

class ClusterMembershipTest : public testing::Test {
 protected:
  ClusterMembershipTest()
      : stats_(registry_, "app"),
        membership_(loop_, resolver_, probers_.factory(), stats_,
                    [this](std::shared_ptr<const ClusterSnapshot> s) { published_.push_back(s); }) {
  }

  static std::shared_ptr<const ClusterConfig> config(std::vector<SocketAddress> endpoints,
                                                     std::optional<HealthCheckConfig> hc = {}) {
    ClusterConfig c;
    c.name = "app";
    c.endpoints = std::move(endpoints);
    c.dns_refresh = seconds(30);
    c.health_check = std::move(hc);
    return std::make_shared<const ClusterConfig>(c);
  }
  void configure(std::shared_ptr<const ClusterConfig> c) {
    if (!settings_ || !same_connection_settings(*settings_->config, *c)) {
      settings_ = std::make_shared<const UpstreamSettings>(UpstreamSettings{c, nullptr});
    }
    membership_.configure(std::move(c), settings_);
  }
  const ClusterSnapshot& last() const { return *published_.back(); }
  std::vector<tcp::endpoint> addresses() const {
    std::vector<tcp::endpoint> out;
    for (const EndpointAddress& a : last().addresses) out.push_back(a.address);
    return out;
  }
  std::vector<bool> health() const {
    std::vector<bool> out;
    for (const EndpointAddress& a : last().addresses) out.push_back(a.healthy);
    return out;
  }

  FakeClock clock_;
  FakeDispatcher loop_{clock_};
  FakeResolver resolver_;
  FakeProbers probers_;
  StatsRegistry registry_;
  ClusterStats stats_;
  std::vector<std::shared_ptr<const ClusterSnapshot>> published_;
  std::shared_ptr<const UpstreamSettings> settings_;
  ClusterMembership membership_;
};

const SocketAddress kName{"app.svc", 50051};

TEST_F(ClusterMembershipTest, LiteralAddressesArePublishedAtOnceAndNeverResolved) {
  configure(config({{"10.0.0.1", 50051}, {"::1", 50051}}));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("::1")));
  EXPECT_THAT(health(), ElementsAre(true, true));  // no health_check: every address is healthy
  EXPECT_EQ(last().addresses[0].host, "10.0.0.1");
  EXPECT_EQ(membership_.unresolved(), 0u);
  clock_.advance(seconds(300));
  EXPECT_THAT(resolver_.lookups, IsEmpty());
  EXPECT_EQ(stats_.dns_resolve_total.value(), 0u);
  EXPECT_EQ(stats_.endpoints.value(), 2);
  EXPECT_EQ(stats_.endpoints_healthy.value(), 2);
  EXPECT_EQ(published_.size(), 1u);
}

TEST_F(ClusterMembershipTest, ANameStandsForAllItsAddressesAndIsResolvedAgainEveryDnsRefresh) {
  configure(config({kName}));
  EXPECT_EQ(membership_.unresolved(), 1u);
  ASSERT_EQ(resolver_.lookups.size(), 1u);
  EXPECT_EQ(resolver_.lookups[0].host, "app.svc");
  EXPECT_EQ(resolver_.lookups[0].port, 50051);
  EXPECT_THAT(addresses(), IsEmpty());
  EXPECT_EQ(last().no_address_reason, "app.svc:50051 not resolved yet");

  resolver_.answer({ep("10.0.0.1"), ep("fd00::7")});
  EXPECT_EQ(membership_.unresolved(), 0u);
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("fd00::7")));
  EXPECT_EQ(last().addresses[1].host, "app.svc");  // the TLS name of every address
  EXPECT_EQ(stats_.endpoints_added_total.value(), 2u);

  clock_.advance(seconds(29));
  EXPECT_THAT(resolver_.lookups, IsEmpty());
  clock_.advance(seconds(1));
  ASSERT_EQ(resolver_.lookups.size(), 1u);
  // A pod replaced: one address vanishes, one appears.
  resolver_.answer({ep("10.0.0.2"), ep("fd00::7")});
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.2"), ep("fd00::7")));
  EXPECT_EQ(stats_.endpoints_added_total.value(), 3u);
  EXPECT_EQ(stats_.endpoints_removed_total.value(), 1u);
  EXPECT_EQ(stats_.dns_resolve_total.value(), 2u);
  EXPECT_EQ(stats_.endpoints.value(), 2);
}

TEST_F(ClusterMembershipTest, TheSameAnswerAgainPublishesNothing) {
  configure(config({kName}));
  resolver_.answer({ep("10.0.0.1")});
  const std::size_t n = published_.size();
  clock_.advance(seconds(30));
  resolver_.answer({ep("10.0.0.1"), ep("10.0.0.1")});  // repeats count once
  EXPECT_EQ(published_.size(), n);
}

TEST_F(ClusterMembershipTest, AFailedResolutionKeepsTheLastGoodAddressesAndRetriesSooner) {
  configure(config({kName}));
  resolver_.answer({ep("10.0.0.1"), ep("10.0.0.2")});
  const std::size_t n = published_.size();
  clock_.advance(seconds(30));
  resolver_.fail("Temporary failure in name resolution");
  EXPECT_EQ(published_.size(), n);  // nothing the pools see changed
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("10.0.0.2")));
  EXPECT_EQ(stats_.dns_resolve_failed_total.value(), 1u);
  // Retries after 1 s, 2 s, 4 s, ... up to dns_refresh.
  for (const auto wait :
       {seconds(1), seconds(2), seconds(4), seconds(8), seconds(16), seconds(30), seconds(30)}) {
    clock_.advance(wait - milliseconds(1));
    EXPECT_THAT(resolver_.lookups, IsEmpty()) << wait.count();
    clock_.advance(milliseconds(1));
    ASSERT_EQ(resolver_.lookups.size(), 1u) << wait.count();
    resolver_.fail("Temporary failure in name resolution");
  }
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("10.0.0.2")));
  // A success resets the retry delay.
  clock_.advance(seconds(30));
  resolver_.answer({ep("10.0.0.3")});
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.3")));
  clock_.advance(seconds(30));
  resolver_.fail("Temporary failure in name resolution");
  clock_.advance(seconds(1));
  EXPECT_EQ(resolver_.lookups.size(), 1u);
}

TEST_F(ClusterMembershipTest, ANameThatNeverResolvedLeavesNoAddressAndSaysWhy) {
  configure(config({kName, {"10.0.0.9", 50051}}));
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.9")));  // the literal serves meanwhile
  configure(config({kName}));
  resolver_.fail("Host not found (authoritative)");
  EXPECT_EQ(membership_.unresolved(), 0u);  // it ended; startup need not wait for it
  EXPECT_THAT(addresses(), IsEmpty());
  EXPECT_EQ(last().no_address_reason,
            "cannot resolve app.svc:50051: Host not found (authoritative) (retrying)");
  const auto r = membership_.readiness();
  EXPECT_EQ(r.addresses, 0u);
  EXPECT_EQ(r.healthy, 0u);
  EXPECT_THAT(r.detail, HasSubstr("no address: cannot resolve app.svc:50051"));
  clock_.advance(seconds(1));
  resolver_.answer({ep("10.0.0.1")});
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1")));
  EXPECT_EQ(membership_.readiness().healthy, 1u);
}

TEST_F(ClusterMembershipTest, TwoNamesWithACommonAddressGiveItOnce) {
  configure(config({kName, {"other.svc", 50051}}));
  resolver_.answer({ep("10.0.0.1"), ep("10.0.0.2")});
  resolver_.answer({ep("10.0.0.2"), ep("10.0.0.3")});
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("10.0.0.2"), ep("10.0.0.3")));
  EXPECT_EQ(last().addresses[1].host, "app.svc");
  EXPECT_EQ(last().addresses[2].host, "other.svc");
}

HealthCheckConfig checks(uint32_t healthy = 2, uint32_t unhealthy = 3) {
  HealthCheckConfig hc;
  hc.service = "pkg.S";
  hc.interval = seconds(5);
  hc.timeout = seconds(1);
  hc.healthy_threshold = healthy;
  hc.unhealthy_threshold = unhealthy;
  return hc;
}

TEST_F(ClusterMembershipTest, AnAddressIsCheckedAtOnceAndGetsNoCallsUntilItsFirstSuccess) {
  configure(config({{"10.0.0.1", 50051}, {"10.0.0.2", 50051}}, checks()));
  EXPECT_THAT(health(), ElementsAre(false, false));
  EXPECT_EQ(probers_.pending(ep("10.0.0.1")), 1u);
  EXPECT_EQ(probers_.pending(ep("10.0.0.2")), 1u);
  EXPECT_EQ(probers_.checks.front().service, "pkg.S");
  EXPECT_THAT(membership_.readiness().detail,
              HasSubstr("10.0.0.1:50051 not checked yet; 10.0.0.2:50051 not checked yet"));
  probers_.answer(ep("10.0.0.1"), true);
  EXPECT_THAT(health(), ElementsAre(true, false));
  EXPECT_EQ(stats_.endpoints_healthy.value(), 1);
  EXPECT_EQ(stats_.endpoints_unhealthy.value(), 1);
  EXPECT_EQ(stats_.health_check_success_total.value(), 1u);
}

TEST_F(ClusterMembershipTest, ChecksComeOneIntervalAfterTheLastEndedAndThresholdsDecide) {
  configure(config({{"10.0.0.1", 50051}}, checks(2, 3)));
  probers_.answer(ep("10.0.0.1"), true);
  EXPECT_THAT(health(), ElementsAre(true));
  for (int failure = 1; failure <= 3; ++failure) {
    clock_.advance(seconds(5) - milliseconds(1));
    EXPECT_EQ(probers_.pending(ep("10.0.0.1")), 0u);
    clock_.advance(milliseconds(1));
    probers_.answer(ep("10.0.0.1"), false, "timeout after 1000ms");
    EXPECT_THAT(health(), ElementsAre(failure < 3)) << failure;
  }
  EXPECT_EQ(stats_.health_check_failure_total.value(), 3u);
  const auto r = membership_.readiness();
  EXPECT_EQ(r.healthy, 0u);
  EXPECT_EQ(r.detail, "10.0.0.1:50051 timeout after 1000ms");
  clock_.advance(seconds(5));
  probers_.answer(ep("10.0.0.1"), true);
  EXPECT_THAT(health(), ElementsAre(false));  // one success of two
  clock_.advance(seconds(5));
  probers_.answer(ep("10.0.0.1"), true);
  EXPECT_THAT(health(), ElementsAre(true));
  EXPECT_EQ(membership_.readiness().healthy, 1u);
}

TEST_F(ClusterMembershipTest,
       AFlappingAddressStaysHealthyAndChecksThatChangeNothingPublishNothing) {
  configure(config({{"10.0.0.1", 50051}}, checks(2, 3)));
  probers_.answer(ep("10.0.0.1"), true);
  const std::size_t n = published_.size();
  for (int i = 0; i < 5; ++i) {
    clock_.advance(seconds(5));
    probers_.answer(ep("10.0.0.1"), false);
    clock_.advance(seconds(5));
    probers_.answer(ep("10.0.0.1"), false);
    clock_.advance(seconds(5));
    probers_.answer(ep("10.0.0.1"), true);
  }
  EXPECT_EQ(published_.size(), n);
  EXPECT_THAT(health(), ElementsAre(true));
}

TEST_F(ClusterMembershipTest, AVanishedAddressIsNoLongerCheckedAndANewOneIsCheckedAtOnce) {
  configure(config({kName}, checks()));
  resolver_.answer({ep("10.0.0.1")});
  probers_.answer(ep("10.0.0.1"), true);
  clock_.advance(seconds(5));
  EXPECT_EQ(probers_.pending(ep("10.0.0.1")), 1u);  // its check is in flight...
  clock_.advance(seconds(25));
  resolver_.answer({ep("10.0.0.2")});
  EXPECT_EQ(probers_.pending(ep("10.0.0.1")), 0u);  // ...and goes with it
  EXPECT_EQ(probers_.pending(ep("10.0.0.2")), 1u);
  EXPECT_THAT(health(), ElementsAre(false));
  probers_.answer(ep("10.0.0.2"), true);
  EXPECT_THAT(health(), ElementsAre(true));
}

TEST_F(ClusterMembershipTest, AReloadKeepsNamesThatStayAndDropsTheRest) {
  configure(config({kName, {"old.svc", 50051}}));
  resolver_.answer({ep("10.0.0.1")});
  ASSERT_EQ(resolver_.lookups.size(), 1u);  // old.svc still pending
  configure(config({kName, {"10.0.0.5", 50051}}));
  // app.svc is not resolved again; its addresses stay.
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("10.0.0.5")));
  EXPECT_EQ(resolver_.lookups.size(), 1u);
  const std::size_t n = published_.size();
  resolver_.answer({ep("10.0.0.9")});  // the late answer for old.svc, which is gone
  EXPECT_EQ(published_.size(), n);
  EXPECT_THAT(addresses(), ElementsAre(ep("10.0.0.1"), ep("10.0.0.5")));
}

TEST_F(ClusterMembershipTest, AReloadThatChangesOnlyPoolSettingsKeepsTheConnectionSettings) {
  configure(config({{"10.0.0.1", 50051}}));
  const auto before = last().settings;
  auto next = std::make_shared<ClusterConfig>(*config({{"10.0.0.1", 50051}}));
  next->max_stream_duration = seconds(3);
  configure(next);
  EXPECT_EQ(last().settings, before);
  EXPECT_EQ(last().config->max_stream_duration, seconds(3));
  next = std::make_shared<ClusterConfig>(*next);
  next->connect_timeout = seconds(3);
  configure(next);
  EXPECT_NE(last().settings, before);
}

TEST_F(ClusterMembershipTest, ANewDnsRefreshAppliesFromTheReload) {
  configure(config({kName}));
  resolver_.answer({ep("10.0.0.1")});
  clock_.advance(seconds(20));
  auto next = std::make_shared<ClusterConfig>(*config({kName}));
  next->dns_refresh = seconds(5);
  configure(next);
  clock_.advance(seconds(5));
  EXPECT_EQ(resolver_.lookups.size(), 1u);
  resolver_.answer({ep("10.0.0.1")});
  clock_.advance(seconds(5));
  EXPECT_EQ(resolver_.lookups.size(), 1u);
}

TEST_F(ClusterMembershipTest, HealthCheckingTurnedOnByAReloadChecksEveryAddressAfresh) {
  configure(config({{"10.0.0.1", 50051}}));
  EXPECT_THAT(health(), ElementsAre(true));
  configure(config({{"10.0.0.1", 50051}}, checks()));
  EXPECT_THAT(health(), ElementsAre(false));  // not checked yet
  probers_.answer(ep("10.0.0.1"), true);
  EXPECT_THAT(health(), ElementsAre(true));
  // New thresholds keep the verdict, with a new prober (the service may have changed).
  const int made = probers_.made;
  HealthCheckConfig other = checks(2, 1);
  other.service = "pkg.T";
  configure(config({{"10.0.0.1", 50051}}, other));
  EXPECT_EQ(probers_.made, made + 1);
  EXPECT_THAT(health(), ElementsAre(true));
  ASSERT_EQ(probers_.pending(ep("10.0.0.1")), 1u);
  probers_.answer(ep("10.0.0.1"), false);  // unhealthy_threshold is 1 now
  EXPECT_THAT(health(), ElementsAre(false));
  // Turned off: every address counts as healthy again, and nothing is checked.
  configure(config({{"10.0.0.1", 50051}}));
  EXPECT_THAT(health(), ElementsAre(true));
  clock_.advance(seconds(60));
  EXPECT_EQ(probers_.pending(ep("10.0.0.1")), 0u);
}

TEST_F(ClusterMembershipTest, StopForgetsEverythingAndLateAnswersAreIgnored) {
  configure(config({kName, {"10.0.0.2", 50051}}, checks()));
  EXPECT_EQ(stats_.endpoints.value(), 1);
  membership_.stop();
  const std::size_t n = published_.size();
  resolver_.answer({ep("10.0.0.1")});
  clock_.advance(seconds(300));
  EXPECT_EQ(published_.size(), n);
  EXPECT_EQ(membership_.readiness().addresses, 0u);
  EXPECT_EQ(stats_.endpoints.value(), 0);
  EXPECT_EQ(stats_.endpoints_unhealthy.value(), 0);
}

}  // namespace
}  // namespace sluice
