// An engine's waiting requests (InstanceView::waiting, a WaitingQueue) and running batch
// (InstanceView::running, a RunningBatch), in order. They read like a std::deque / std::vector
// of RequestState (random access, iteration, push_back, insert, erase), but each request lives
// in its own box and the container holds the boxes: taking requests out of the middle,
// putting preempted ones back at the queue's front, or admitting them to the batch moves
// 8-byte pointers where a container of RequestState moved ~290 bytes and a string per
// request. In a burst the simulated engine admits EDF's fresh requests from behind thousands
// of preempted ones, and preempts from the middle of a batch of ~300 (docs/simulator.md,
// "EDF in a burst" and "Requests moved as boxes, the waiting order in sorted blocks"). The
// container holds the boxes as plain pointers, which it owns (a box leaves it as a
// RequestBox): they move by memmove, where unique_ptrs moved one by one.
#pragma once
#include <cstddef>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "slocore/core/request_state.h"

namespace slocore {

using RequestBox = std::unique_ptr<RequestState>;

// Boxes: std::deque<RequestState*> (the waiting queue: O(1) at both ends) or
// std::vector<RequestState*> (the running batch: appends only, the fastest walk), each
// pointer owned by the container.
template <class Boxes>
class BoxedRequests {
 public:
  using Box = RequestBox;

 private:
  // A random-access iterator over the boxes that reads the requests in them.
  template <class Base, class T>
  class Iter {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = RequestState;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;

    Iter() = default;
    explicit Iter(Base it) : it_(it) {}
    template <class B, class U, class = std::enable_if_t<std::is_convertible_v<B, Base>>>
    Iter(const Iter<B, U>& o) : it_(o.base()) {}  // NOLINT: iterator -> const_iterator

    reference operator*() const { return **it_; }
    pointer operator->() const { return *it_; }
    reference operator[](difference_type n) const { return *it_[n]; }
    Iter& operator++() { return ++it_, *this; }
    Iter operator++(int) { return Iter(it_++); }
    Iter& operator--() { return --it_, *this; }
    Iter operator--(int) { return Iter(it_--); }
    Iter& operator+=(difference_type n) { return it_ += n, *this; }
    Iter& operator-=(difference_type n) { return it_ -= n, *this; }
    friend Iter operator+(Iter a, difference_type n) { return a += n; }
    friend Iter operator+(difference_type n, Iter a) { return a += n; }
    friend Iter operator-(Iter a, difference_type n) { return a -= n; }
    friend difference_type operator-(const Iter& a, const Iter& b) { return a.it_ - b.it_; }
    friend bool operator==(const Iter& a, const Iter& b) { return a.it_ == b.it_; }
    friend bool operator!=(const Iter& a, const Iter& b) { return a.it_ != b.it_; }
    friend bool operator<(const Iter& a, const Iter& b) { return a.it_ < b.it_; }
    friend bool operator>(const Iter& a, const Iter& b) { return a.it_ > b.it_; }
    friend bool operator<=(const Iter& a, const Iter& b) { return a.it_ <= b.it_; }
    friend bool operator>=(const Iter& a, const Iter& b) { return a.it_ >= b.it_; }
    Base base() const { return it_; }

   private:
    Base it_{};
  };

 public:
  using value_type = RequestState;
  using size_type = size_t;
  using reference = RequestState&;
  using const_reference = const RequestState&;
  using iterator = Iter<typename Boxes::iterator, RequestState>;
  using const_iterator = Iter<typename Boxes::const_iterator, const RequestState>;

  BoxedRequests() = default;
  BoxedRequests(std::initializer_list<RequestState> init) { assign(init.begin(), init.end()); }
  BoxedRequests(const BoxedRequests& o) { assign(o.begin(), o.end()); }
  BoxedRequests(BoxedRequests&& o) noexcept { q_.swap(o.q_); }
  ~BoxedRequests() { clear(); }
  BoxedRequests& operator=(const BoxedRequests& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  BoxedRequests& operator=(BoxedRequests&& o) noexcept {
    if (this != &o) clear(), q_.swap(o.q_);
    return *this;
  }
  BoxedRequests& operator=(std::initializer_list<RequestState> init) {
    assign(init.begin(), init.end());
    return *this;
  }
  template <class It>
  void assign(It first, It last) {
    BoxedRequests q;
    for (; first != last; ++first) q.push_back(std::make_unique<RequestState>(*first));
    q_.swap(q.q_);  // q deletes the old boxes
  }

  size_t size() const { return q_.size(); }
  bool empty() const { return q_.empty(); }
  RequestState& operator[](size_t i) { return *q_[i]; }
  const RequestState& operator[](size_t i) const { return *q_[i]; }
  RequestState& front() { return *q_.front(); }
  const RequestState& front() const { return *q_.front(); }
  RequestState& back() { return *q_.back(); }
  const RequestState& back() const { return *q_.back(); }
  iterator begin() { return iterator(q_.begin()); }
  iterator end() { return iterator(q_.end()); }
  const_iterator begin() const { return const_iterator(q_.begin()); }
  const_iterator end() const { return const_iterator(q_.end()); }

  void clear() {
    for (RequestState* s : q_) delete s;
    q_.clear();
  }
  void push_back(RequestState s) { push_back(std::make_unique<RequestState>(std::move(s))); }
  // Inserts [first, last) before pos (values are copied, or moved from move iterators).
  template <class It>
  iterator insert(const_iterator pos, It first, It last) {
    std::vector<Box> boxes;
    for (; first != last; ++first) boxes.push_back(std::make_unique<RequestState>(*first));
    const size_t at = size_t(pos.base() - q_.cbegin());
    q_.insert(pos.base(), boxes.size(), nullptr);  // may throw: the boxes still own their requests
    for (size_t j = 0; j < boxes.size(); ++j) q_[at + j] = boxes[j].release();
    return begin() + std::ptrdiff_t(at);
  }
  iterator erase(const_iterator pos) { return erase(pos, std::next(pos)); }
  iterator erase(const_iterator first, const_iterator last) {
    for (auto it = first.base(); it != last.base(); ++it) delete *it;
    return iterator(q_.erase(first.base(), last.base()));
  }

  // Box moves between queues, which move no request: a box at the back, boxes at the front (in
  // their order; `boxes` is left empty).
  void push_back(Box b) {
    q_.push_back(b.get());  // may throw: b still owns its request
    b.release();
  }
  void prepend(std::vector<Box>& boxes) {
    q_.insert(q_.begin(), boxes.size(), nullptr);
    for (size_t j = 0; j < boxes.size(); ++j) q_[j] = boxes[j].release();
    boxes.clear();
  }
  // Takes the requests at `positions` (ascending, distinct, each < size()) out of the queue,
  // handing each box to take(Box) in that order; the others keep their order. Only boxes
  // move, a run at a time: those after the first position (a deque moves those before it
  // when fewer).
  template <class F>
  void take_boxes(const std::vector<size_t>& positions, F&& take) {
    if (positions.empty()) return;
    for (size_t i : positions) take(Box(std::exchange(q_[i], nullptr)));  // if take throws, no box is held twice
    auto out = q_.begin() + std::ptrdiff_t(positions.front());
    for (size_t j = 0; j + 1 < positions.size(); ++j)  // the run between two taken boxes, moved down
      out =
          std::move(q_.begin() + std::ptrdiff_t(positions[j] + 1), q_.begin() + std::ptrdiff_t(positions[j + 1]), out);
    q_.erase(out, q_.begin() + std::ptrdiff_t(positions.back() + 1));
  }

 private:
  Boxes q_;  // owned
};

using WaitingQueue = BoxedRequests<std::deque<RequestState*>>;
using RunningBatch = BoxedRequests<std::vector<RequestState*>>;

}  // namespace slocore
