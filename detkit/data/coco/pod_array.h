#pragma once
// PodArray<T>: a std::vector-like array of trivially copyable values that grows with realloc.
// At COCO scale the polygon coordinate pool alone is ~360 MB; glibc serves blocks that large with
// mmap and grows them with mremap, so growing never holds the old and the new block at once and
// peak memory stays at the size actually used (std::vector's grow-and-copy would double it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace detkit::data {

template <typename T>
class PodArray {
  static_assert(std::is_trivially_copyable_v<T>, "PodArray holds trivially copyable values");

 public:
  PodArray() = default;
  ~PodArray() { std::free(data_); }
  PodArray(const PodArray& other) { *this = other; }
  PodArray& operator=(const PodArray& other) {
    if (this != &other) {
      resize(0);
      append(other.data_, other.size_);
    }
    return *this;
  }
  PodArray(PodArray&& other) noexcept { swap(other); }
  PodArray& operator=(PodArray&& other) noexcept {
    swap(other);
    return *this;
  }
  void swap(PodArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void push_back(const T& value) {
    if (size_ == capacity_) grow(size_ + 1);
    data_[size_++] = value;
  }
  void append(const T* values, size_t count) {
    if (count == 0) return;
    if (size_ + count > capacity_) grow(size_ + count);
    std::memcpy(data_ + size_, values, count * sizeof(T));
    size_ += count;
  }
  /// Shrinks, or grows with zero-filled values.
  void resize(size_t size) {
    if (size > capacity_) grow(size);
    if (size > size_) std::memset(static_cast<void*>(data_ + size_), 0, (size - size_) * sizeof(T));
    size_ = size;
  }
  void reserve(size_t capacity) {
    if (capacity > capacity_) reallocate(capacity);
  }
  /// Returns the unused capacity to the system (in place for mmap-backed blocks).
  void shrink_to_fit() {
    if (capacity_ > size_) reallocate(size_);
  }
  /// Bytes held, capacity included.
  size_t capacity_bytes() const { return capacity_ * sizeof(T); }

 private:
  void grow(size_t needed) { reallocate(std::max(needed, capacity_ + capacity_ / 2 + 16)); }
  void reallocate(size_t capacity) {
    if (capacity == 0) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      return;
    }
    void* p = std::realloc(data_, capacity * sizeof(T));
    if (!p) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = capacity;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

/// values becomes {values[order[0]], values[order[1]], ...}: a reordering or a selection.
template <typename T>
void gather(PodArray<T>& values, const std::vector<uint32_t>& order) {
  PodArray<T> out;
  out.reserve(order.size());
  for (uint32_t old : order) out.push_back(values[old]);
  values.swap(out);
}

}  // namespace detkit::data
