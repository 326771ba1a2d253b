-- ArgoCD health of a MultigresShard, from kstatus-style status written by the operator:
-- deletion, then observedGeneration (no flapping while the operator catches up), then Stalled,
-- Ready, Reconciling. A refused spec is reported for the refused generation with Stalled=True, so
-- it shows Degraded with the reason. Keep in step with gitops/flux/shards.yaml.
local hs = {status = "Progressing", message = "Waiting for the operator to report status"}
if obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Being deleted: the operator cleans up before it releases its finalizer"
  return hs
end
if obj.status == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= generation then
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end
local conditions = {}
if obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    conditions[condition.type] = condition
  end
end
local function message(condition, fallback)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  return fallback
end
local stalled = conditions["Stalled"]
if stalled ~= nil and stalled.status == "True" then
  return {status = "Degraded", message = message(stalled, "Stalled")}
end
local ready = conditions["Ready"]
if ready ~= nil and ready.status == "True" then
  return {status = "Healthy", message = message(ready, "Ready")}
end
local reconciling = conditions["Reconciling"]
if reconciling ~= nil and reconciling.status == "True" then
  return {status = "Progressing", message = message(reconciling, "Reconciling")}
end
if ready ~= nil and ready.status == "False" then
  hs.message = message(ready, "Not ready")
end
return hs
