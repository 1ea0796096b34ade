// Drives one request through a FilterChain: runs on_request() filter by filter, holds it while
// a filter says Stop, and makes sure every filter sees on_complete() exactly once.
//
//   Idle --start()--> Running --all Continue--> Admitted (ChainCallbacks::admit)
//                        |  ^
//                  Stop  v  | resume()
//                      Stopped --reject()--> Shed (ChainCallbacks::shed)
//   any state --complete()--> Completed (on_complete on every filter, reached or not)
//
// Misuse (resume() from a filter that is not the one stopped, reject() after admission, a
// second complete()) is ignored: a late timer or grant must never act on a finished request.
// All calls on the request's dispatcher thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "filters/filter.h"
#include "filters/filter_chain.h"

namespace sluice {

class ActiveChain {
 public:
  enum class State { Idle, Running, Stopped, Admitted, Shed, Completed };

  ActiveChain(const FilterChain& chain, ChainCallbacks& callbacks);
  ~ActiveChain();
  ActiveChain(const ActiveChain&) = delete;
  ActiveChain& operator=(const ActiveChain&) = delete;

  // Runs the filters; may call admit() or shed() before returning.
  void start();
  // The request will not be admitted: every filter gets on_abandoned() (before admission only,
  // once).
  void abandon();
  // The upstream's answer began: every filter hears it (after admission only, once).
  void on_response(const ResponseStart& response);
  // The request ended (any way, at any point): every filter gets on_complete() once. When the
  // chain shed the request and outcome.shed_by is unset, it is filled in.
  void complete(const RequestOutcome& outcome);

  State state() const { return state_; }
  int shed_by() const { return shed_by_; }

 private:
  class Slot;

  void run_from(size_t index);
  void resume(size_t index);
  void reject(size_t index, const LocalReply& reply);

  ChainCallbacks& callbacks_;
  std::vector<std::unique_ptr<Slot>> slots_;
  State state_ = State::Idle;
  size_t current_ = 0;           // the filter in on_request() (Running) or holding (Stopped)
  bool resumed_inline_ = false;  // the current filter resumed before returning Stop
  bool responded_ = false;       // on_response() was passed on
  bool abandoned_ = false;       // on_abandoned() was passed on
  int shed_by_ = -1;
  // Lets a method notice that a callback destroyed the chain under it (a contract breach we
  // survive rather than crash on).
  std::shared_ptr<bool> alive_;
};

}  // namespace sluice
