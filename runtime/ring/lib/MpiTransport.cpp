//===- MpiTransport.cpp - The ring over MPI -------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Ring/MpiTransport.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

namespace fmha::ring {

using rt::ErrorCode;
using rt::Status;

namespace {

Status mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    len = 0;
  return Status::error(ErrorCode::LaunchFailed,
                       std::string(call) + " failed: " +
                           (len ? std::string(text, len) : "unknown error"));
}

/// MPI counts are int: larger buffers go as several messages.
constexpr size_t kMaxMessage = size_t(1) << 30;

class MpiTransport final : public Transport {
public:
  MpiTransport(int rank, int size) : rank_(rank), size_(size) {}
  ~MpiTransport() override {
    if (!requests_.empty())
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                  MPI_STATUSES_IGNORE);
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return "mpi: " + std::to_string(size_) + " ranks";
  }

  Status startShift(const void *send, void *recv, size_t bytes) override {
    int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    for (size_t off = 0; off < bytes; off += kMaxMessage) {
      int n = static_cast<int>(std::min(kMaxMessage, bytes - off));
      MPI_Request r[2];
      int rc = MPI_Irecv(static_cast<char *>(recv) + off, n, MPI_BYTE, prev,
                         tag_, MPI_COMM_WORLD, &r[0]);
      if (rc != MPI_SUCCESS)
        return mpiError("MPI_Irecv", rc);
      requests_.push_back(r[0]);
      rc = MPI_Isend(const_cast<char *>(static_cast<const char *>(send)) + off,
                     n, MPI_BYTE, next, tag_, MPI_COMM_WORLD, &r[1]);
      if (rc != MPI_SUCCESS)
        return mpiError("MPI_Isend", rc);
      requests_.push_back(r[1]);
      // Messages of one pair of ranks arrive in order; distinct tags keep
      // the shifts of one step apart all the same.
      tag_ = (tag_ + 1) % 32768;
    }
    return Status::success();
  }

  Status waitShifts() override {
    if (requests_.empty())
      return Status::success();
    int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                         MPI_STATUSES_IGNORE);
    requests_.clear();
    return rc == MPI_SUCCESS ? Status::success() : mpiError("MPI_Waitall", rc);
  }

  Status allGather(const void *send, void *recv, size_t bytes) override {
    if (bytes > static_cast<size_t>(INT_MAX))
      return Status::error(ErrorCode::InvalidArgument,
                           "allGather of more than 2^31-1 bytes a rank");
    int rc = MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv,
                           static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? Status::success()
                             : mpiError("MPI_Allgather", rc);
  }

  rt::Expected<bool> allOk(bool ok) override {
    int mine = ok ? 1 : 0, all = 0;
    int rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      return mpiError("MPI_Allreduce", rc);
    return all == 1;
  }

private:
  int rank_, size_;
  int tag_ = 0;
  std::vector<MPI_Request> requests_;
};

} // namespace

rt::Expected<std::unique_ptr<Transport>> createMpiTransport(int *argc,
                                                            char ***argv) {
  int rc = MPI_Init(argc, argv);
  if (rc != MPI_SUCCESS)
    return mpiError("MPI_Init", rc);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  if ((rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank)) != MPI_SUCCESS ||
      (rc = MPI_Comm_size(MPI_COMM_WORLD, &size)) != MPI_SUCCESS) {
    Status s = mpiError("MPI_Comm_rank/size", rc);
    MPI_Finalize();
    return s;
  }
  return std::unique_ptr<Transport>(new MpiTransport(rank, size));
}

void mpiAbort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

} // namespace fmha::ring
