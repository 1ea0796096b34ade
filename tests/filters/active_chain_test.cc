#include "filters/active_chain.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/fakes/fake_dispatcher.h"

namespace sluice {
namespace {

// A filter whose on_request() answer and side effects each test scripts; logs every call.
class ScriptedFilter final : public StreamFilter {
 public:
  ScriptedFilter(std::string name, std::vector<std::string>& log)
      : name_(std::move(name)), log_(log) {}

  FilterStatus on_request(FilterCallbacks& callbacks) override {
    callbacks_ = &callbacks;
    log_.push_back(name_ + ".request");
    if (during_request) during_request(callbacks);
    return answer;
  }
  void on_admitted() override { log_.push_back(name_ + ".admitted"); }
  void on_waiting() override {
    ++waits;  // counted, not logged: the logs below are about the order of the other calls
    if (during_waiting) during_waiting();
  }
  void on_complete(const RequestOutcome& outcome) override {
    log_.push_back(name_ + ".complete");
    ++completes;
    last_outcome = outcome;
  }

  FilterCallbacks& callbacks() { return *callbacks_; }

  FilterStatus answer = FilterStatus::Continue;
  std::function<void(FilterCallbacks&)> during_request;
  std::function<void()> during_waiting;
  int completes = 0;
  int waits = 0;
  RequestOutcome last_outcome;

 private:
  std::string name_;
  std::vector<std::string>& log_;
  FilterCallbacks* callbacks_ = nullptr;
};

class ScriptedFactory final : public FilterFactory {
 public:
  ScriptedFactory(std::string name, std::vector<std::string>& log)
      : name_(std::move(name)), log_(log) {}
  const std::string& name() const override { return name_; }
  const std::string& type() const override { return type_; }
  std::unique_ptr<StreamFilter> create() override {
    auto f = std::make_unique<ScriptedFilter>(name_, log_);
    last = f.get();
    return f;
  }
  ScriptedFilter* last = nullptr;

 private:
  std::string name_;
  std::string type_ = "scripted";
  std::vector<std::string>& log_;
};

// The proxy's side: records admit()/shed(); a test may hook them.
class RecordingCallbacks final : public ChainCallbacks {
 public:
  explicit RecordingCallbacks(FakeDispatcher& d, std::vector<std::string>& log)
      : d_(d), log_(log) {}
  const RequestInfo& request() const override { return info; }
  Dispatcher& dispatcher() override { return d_; }
  void admit() override {
    log_.push_back("proxy.admit");
    if (on_admit) on_admit();
  }
  void shed(const LocalReply& reply, int index) override {
    log_.push_back("proxy.shed " + std::to_string(index) + " " + reply.message);
    if (on_shed) on_shed();
  }
  RequestInfo info;
  std::function<void()> on_admit;
  std::function<void()> on_shed;

 private:
  FakeDispatcher& d_;
  std::vector<std::string>& log_;
};

class ActiveChainTest : public ::testing::Test {
 protected:
  // A chain of `n` scripted filters named f0, f1, ...
  void build(size_t n) {
    std::vector<std::shared_ptr<FilterFactory>> factories;
    factories_.clear();
    for (size_t i = 0; i < n; ++i) {
      std::string name = "f";
      name += std::to_string(i);  // not "f" + ...: GCC 12 -O3 warns falsely (-Wrestrict)
      auto f = std::make_unique<ScriptedFactory>(std::move(name), log_);
      factories_.push_back(f.get());
      factories.push_back(std::move(f));
    }
    chain_ = std::make_unique<FilterChain>("ingress", std::move(factories));
    active_ = std::make_unique<ActiveChain>(*chain_, proxy_);
  }
  ScriptedFilter& filter(size_t i) { return *factories_[i]->last; }
  LocalReply reply(std::string message) {
    LocalReply r;
    r.message = std::move(message);
    return r;
  }

  FakeClock clock_;
  FakeDispatcher worker_{clock_, 0};
  std::vector<std::string> log_;
  RecordingCallbacks proxy_{worker_, log_};
  std::vector<ScriptedFactory*> factories_;
  std::unique_ptr<FilterChain> chain_;
  std::unique_ptr<ActiveChain> active_;
};

using Log = std::vector<std::string>;

TEST_F(ActiveChainTest, RunsFiltersInOrderThenTellsEveryFilterBeforeTheProxyAdmits) {
  build(3);
  active_->start();
  EXPECT_EQ(log_, (Log{"f0.request", "f1.request", "f2.request", "f0.admitted", "f1.admitted",
                       "f2.admitted", "proxy.admit"}));
  EXPECT_EQ(active_->state(), ActiveChain::State::Admitted);
}

TEST_F(ActiveChainTest, EmptyChainAdmitsAtOnce) {
  build(0);
  active_->start();
  EXPECT_EQ(log_, (Log{"proxy.admit"}));
}

TEST_F(ActiveChainTest, StopHoldsTheRequestUntilThatFilterResumes) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  active_->start();
  EXPECT_EQ(log_, (Log{"f0.request", "f1.request"}));
  EXPECT_EQ(active_->state(), ActiveChain::State::Stopped);
  filter(1).callbacks().resume();
  EXPECT_EQ(log_.back(), "proxy.admit");
  EXPECT_EQ(log_[2], "f2.request");
}

TEST_F(ActiveChainTest, FiltersBeforeTheOneThatStopsAreToldTheRequestWaits) {
  build(4);
  filter(2).answer = FilterStatus::Stop;
  active_->start();
  EXPECT_EQ(filter(0).waits, 1);
  EXPECT_EQ(filter(1).waits, 1);
  EXPECT_EQ(filter(2).waits, 0);  // the one that stopped knows
  EXPECT_EQ(filter(3).waits, 0);  // not reached yet
  filter(3).answer = FilterStatus::Stop;
  filter(2).callbacks().resume();
  EXPECT_EQ(filter(0).waits, 2);  // told again, each time a later filter stops
  EXPECT_EQ(filter(2).waits, 1);
}

TEST_F(ActiveChainTest, NobodyIsToldTheRequestWaitsWhenNoFilterStops) {
  build(3);
  active_->start();
  EXPECT_EQ(filter(0).waits + filter(1).waits + filter(2).waits, 0);
}

TEST_F(ActiveChainTest, AFilterMayRejectWhenToldTheRequestWaits) {
  build(3);
  filter(2).answer = FilterStatus::Stop;
  filter(0).during_waiting = [&] { filter(0).callbacks().reject(reply("spent")); };
  active_->start();
  EXPECT_EQ(filter(1).waits, 0);  // the request was shed: nobody else is told it waits
  EXPECT_EQ(active_->state(), ActiveChain::State::Shed);
  EXPECT_EQ(log_.back(), "proxy.shed 0 spent");
}

TEST_F(ActiveChainTest, ResumeFromAFilterThatIsNotHoldingIsIgnored) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  active_->start();
  filter(0).callbacks().resume();
  EXPECT_EQ(active_->state(), ActiveChain::State::Stopped);
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(ActiveChainTest, ResumeInsideOnRequestCountsAsContinue) {
  build(2);
  filter(0).answer = FilterStatus::Stop;
  filter(0).during_request = [](FilterCallbacks& cb) { cb.resume(); };
  active_->start();
  EXPECT_EQ(log_.back(), "proxy.admit");
}

TEST_F(ActiveChainTest, RejectWhileHeldShedsNamingTheRejectingFilter) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  active_->start();
  filter(0).callbacks().reject(reply("budget"));  // e.g. f0's timer, while f1 holds
  EXPECT_EQ(log_.back(), "proxy.shed 0 budget");
  EXPECT_EQ(active_->state(), ActiveChain::State::Shed);
  EXPECT_EQ(active_->shed_by(), 0);
}

TEST_F(ActiveChainTest, RejectInsideOnRequestShedsAndLaterFiltersNeverSeeTheRequest) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  filter(1).during_request = [this](FilterCallbacks& cb) { cb.reject(reply("queue full")); };
  active_->start();
  EXPECT_EQ(log_, (Log{"f0.request", "f1.request", "proxy.shed 1 queue full"}));
}

TEST_F(ActiveChainTest, CompleteReachesEveryFilterExactlyOnceEvenThoseNeverReached) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  active_->start();
  RequestOutcome o;
  o.reason = EndReason::ClientReset;
  active_->complete(o);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(filter(i).completes, 1) << i;
    EXPECT_EQ(filter(i).last_outcome.reason, EndReason::ClientReset);
  }
  active_->complete(o);  // a second end is ignored
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(filter(i).completes, 1) << i;
}

TEST_F(ActiveChainTest, CompleteBeforeStartStillTellsEveryFilter) {
  build(2);
  active_->complete(RequestOutcome{});
  EXPECT_EQ(log_, (Log{"f0.complete", "f1.complete"}));
  active_->start();  // too late: nothing runs
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(ActiveChainTest, LateResumeOrRejectAfterTheEndIsIgnored) {
  build(2);
  filter(0).answer = FilterStatus::Stop;
  active_->start();
  active_->complete(RequestOutcome{});
  filter(0).callbacks().resume();
  filter(0).callbacks().reject(reply("late"));
  EXPECT_EQ(log_, (Log{"f0.request", "f0.complete", "f1.complete"}));
}

TEST_F(ActiveChainTest, RejectAfterAdmissionIsIgnored) {
  build(1);
  active_->start();
  filter(0).callbacks().reject(reply("late"));
  EXPECT_EQ(active_->state(), ActiveChain::State::Admitted);
  EXPECT_EQ(log_.back(), "proxy.admit");
}

TEST_F(ActiveChainTest, OutcomeOfAShedRequestNamesTheFilterThatShedIt) {
  build(2);
  filter(1).during_request = [this](FilterCallbacks& cb) { cb.reject(reply("no")); };
  filter(1).answer = FilterStatus::Stop;
  active_->start();
  RequestOutcome o;
  o.reason = EndReason::Shed;
  active_->complete(o);
  EXPECT_EQ(filter(0).last_outcome.shed_by, 1);
}

TEST_F(ActiveChainTest, ProxyMayEndTheRequestFromInsideShed) {
  build(3);
  filter(1).answer = FilterStatus::Stop;
  filter(1).during_request = [this](FilterCallbacks& cb) { cb.reject(reply("no")); };
  proxy_.on_shed = [this] {
    RequestOutcome o;
    o.reason = EndReason::Shed;
    active_->complete(o);
  };
  active_->start();
  EXPECT_EQ(log_, (Log{"f0.request", "f1.request", "proxy.shed 1 no", "f0.complete", "f1.complete",
                       "f2.complete"}));
}

TEST_F(ActiveChainTest, ProxyMayEndTheRequestFromInsideAdmit) {
  build(2);
  proxy_.on_admit = [this] { active_->complete(RequestOutcome{}); };
  active_->start();
  EXPECT_EQ(filter(0).completes, 1);
  EXPECT_EQ(filter(1).completes, 1);
}

TEST_F(ActiveChainTest, FiltersSeeTheProxysRequestAndDispatcher) {
  build(1);
  proxy_.info.path = "/pkg.Svc/Method";
  active_->start();
  EXPECT_EQ(filter(0).callbacks().request().path, "/pkg.Svc/Method");
  EXPECT_EQ(&filter(0).callbacks().dispatcher(), &worker_);
}

}  // namespace
}  // namespace sluice
