package dev.warden.client;

import java.util.List;

/**
 * Membership, roles and indexes as seen by the leader (or by the answering node).
 *
 * @param clusterId the cluster's id
 * @param leaderId the leader's node id, 0 if none is known
 * @param term the current term
 * @param commitIndex the commit index
 * @param nodeId the node that answered
 * @param members every member
 */
public record ClusterStatus(String clusterId, long leaderId, long term, long commitIndex,
    long nodeId, List<Member> members) {

  /**
   * One member.
   *
   * @param id node id
   * @param addr its address
   * @param role leader, follower, learner, candidate, unknown or unreachable
   * @param appliedIndex its applied index
   */
  public record Member(long id, String addr, String role, long appliedIndex) {}
}
