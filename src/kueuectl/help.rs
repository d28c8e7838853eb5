//! Help as upstream kueuectl (cobra) shows it: each command's aliases and
//! upstream's examples, added to clap's help.

use clap::Command;

/// Upstream's examples by command path (`kueuectl` is replaced by the
/// name the plugin was run as).
const EXAMPLES: &[(&str, &str)] = &[
    (
        "create",
        "# Create local queue\nkueuectl create localqueue my-local-queue -c my-cluster-queue",
    ),
    (
        "create clusterqueue",
        "# Create a ClusterQueue\nkueuectl create clusterqueue my-cluster-queue\n\n\
         # Create a ClusterQueue with cohort, namespace selector and other details\n\
         kueuectl create clusterqueue my-cluster-queue \\\n--cohort cohortname \\\n\
         --queuing-strategy StrictFIFO \\\n--namespace-selector fooX=barX,fooY=barY \\\n\
         --reclaim-within-cohort Any \\\n--preemption-within-cluster-queue LowerPriority\n\n\
         # Create a ClusterQueue with nominal quota and one resource flavor named alpha\n\
         kueuectl create clusterqueue my-cluster-queue --nominal-quota \"alpha:cpu=9;memory=36Gi\"\n\n\
         # Create a ClusterQueue with multiple resource flavors named alpha and beta\n\
         kueuectl create clusterqueue my-cluster-queue \\\n--cohort cohortname \\\n\
         --nominal-quota \"alpha:cpu=9;memory=36Gi;nvidia.com/gpu=10,beta:cpu=18;memory=72Gi;nvidia.com/gpu=20\" \\\n\
         --borrowing-limit \"alpha:cpu=1;memory=1Gi;nvidia.com/gpu=1,beta:cpu=2;memory=2Gi;nvidia.com/gpu=2\" \\\n\
         --lending-limit \"alpha:cpu=1;memory=1Gi;nvidia.com/gpu=1,beta:cpu=2;memory=2Gi;nvidia.com/gpu=2\"",
    ),
    (
        "create localqueue",
        "# Create a local queue\nkueuectl create localqueue my-local-queue -c my-cluster-queue\n\n\
         # Create a local queue with unknown cluster queue\n\
         kueuectl create localqueue my-local-queue -c my-cluster-queue -i",
    ),
    (
        "create resourceflavor",
        "# Create a resource flavor\nkueuectl create resourceflavor my-resource-flavor\n\n\
         # Create a resource flavor with labels\nkueuectl create resourceflavor my-resource-flavor \\\n\
         --node-labels kubernetes.io/arch=arm64,kubernetes.io/os=linux\n\n\
         # Create a resource flavor with node taints\nkueuectl create resourceflavor my-resource-flavor \\\n\
         --node-taints key1=value:NoSchedule,key2:NoExecute\n\n\
         # Create a resource flavor with tolerations\nkueuectl create resourceflavor my-resource-flavor \\\n\
         --tolerations key1=value:NoSchedule,key2:NoExecute,key3=value,key4,:PreferNoSchedule",
    ),
    (
        "delete workload",
        "# Delete the Workload\nkueuectl delete kueueworkload my-workload",
    ),
    ("list", "# List LocalQueue\nkueuectl list localqueue"),
    ("list clusterqueue", "# List ClusterQueue\nkueuectl list clusterqueue"),
    ("list localqueue", "# List LocalQueue\nkueuectl list localqueue"),
    (
        "list pods",
        "# List Pods for the Job\nkueuectl list pods --for job/job-name\n\n\
         # List Pods for the Pod group\nkueuectl list pods --for pod/pod-name",
    ),
    ("list resourceflavor", "# List ResourceFlavor\nkueuectl list resourceflavor"),
    ("list workload", "# List Workload\nkueuectl list kueueworkload"),
    ("resume", "# Resume the workload\nkueuectl resume workload my-workload"),
    (
        "resume clusterqueue",
        "# Resume the clusterqueue\nkueuectl resume clusterqueue my-clusterqueue",
    ),
    (
        "resume localqueue",
        "# Resume the localqueue\nkueuectl resume localqueue my-localqueue",
    ),
    (
        "resume workload",
        "# Resume the workload\nkueuectl resume kueueworkload my-workload",
    ),
    ("stop", "# Stop the workload\nkueuectl stop workload my-workload"),
    (
        "stop clusterqueue",
        "# Stop the clusterqueue\nkueuectl stop clusterqueue my-clusterqueue",
    ),
    (
        "stop localqueue",
        "# Stop the localqueue\nkueuectl stop localqueue my-localqueue",
    ),
    ("stop workload", "# Stop the workload\nkueuectl stop workload my-workload"),
    (
        "version",
        "# Prints the client version and the kueue controller manager image, if installed\nkueuectl version",
    ),
];

/// The examples of a command path, indented as cobra's `Examples:`.
pub fn examples(path: &str, bin: &str) -> Option<String> {
    let (_, text) = EXAMPLES.iter().find(|(p, _)| *p == path)?;
    let body: Vec<String> = text
        .lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {}", l.replace("kueuectl", bin))
            }
        })
        .collect();
    Some(format!("Examples:\n{}", body.join("\n")))
}

/// Adds `Aliases:` (the name and its aliases) and `Examples:` to every
/// subcommand's help, recursively; `path` is the command's path under the
/// root ("" for the root).
pub fn decorate(mut cmd: Command, path: &str, bin: &str) -> Command {
    if !path.is_empty() {
        let aliases: Vec<&str> = cmd.get_visible_aliases().collect();
        if !aliases.is_empty() {
            let mut names = vec![cmd.get_name()];
            names.extend(aliases);
            let text = format!("Aliases:\n  {}", names.join(", "));
            cmd = cmd.before_long_help(text.clone()).before_help(text);
        }
        if let Some(ex) = examples(path, bin) {
            cmd = cmd.after_long_help(ex.clone()).after_help(ex);
        }
    }
    for sub in cmd.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        let child = if path.is_empty() {
            name
        } else {
            format!("{path} {name}")
        };
        let taken = std::mem::take(sub);
        *sub = decorate(taken, &child, bin);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn help_of(path: &[&str]) -> String {
        let mut cmd = decorate(super::super::args::Cli::command(), "", "kubectl kueue");
        let mut c = &mut cmd;
        for p in path {
            c = c.find_subcommand_mut(p).unwrap();
        }
        c.render_long_help().to_string()
    }

    #[test]
    fn subcommand_help_shows_aliases_and_upstreams_examples() {
        let h = help_of(&["stop", "workload"]);
        assert!(
            h.contains("Aliases:\n  workload, kueueworkload, kueueworkloads, kwl, wl"),
            "{h}"
        );
        assert!(
            h.contains(
                "Examples:\n  # Stop the workload\n  kubectl kueue stop workload my-workload"
            ),
            "{h}"
        );
        let h = help_of(&["list", "workload"]);
        assert!(h.contains("kubectl kueue list kueueworkload"), "{h}");
        assert!(help_of(&["create", "cq"]).contains("Aliases:\n  clusterqueue, cq"));
    }

    #[test]
    fn every_example_names_an_existing_command() {
        let cmd = super::super::args::Cli::command();
        for (path, _) in EXAMPLES {
            let mut c = &cmd;
            for p in path.split(' ') {
                c = c
                    .find_subcommand(p)
                    .unwrap_or_else(|| panic!("no command {path}"));
            }
        }
    }
}
